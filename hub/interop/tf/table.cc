#include "hub/interop/tf/table.h"

#include <algorithm>
#include <cstdio>
#include <tuple>

#include "hub/core/crc32c.h"
#include "hub/core/error.h"
#include "hub/core/fileio.h"

namespace hub::tf {

namespace {

constexpr size_t kTrailerSize = 5;  // compression type + masked CRC-32C
constexpr size_t kFooterSize = 48;  // two handles padded to 40 bytes + magic
constexpr size_t kHandlesSize = 40;
constexpr char kNoCompression = 0;
constexpr char kSnappyCompression = 1;

void put_fixed32(std::string* out, uint32_t v) {
  for (int i = 0; i < 4; ++i) out->push_back(static_cast<char>(v >> (8 * i)));
}

void put_fixed64(std::string* out, uint64_t v) {
  for (int i = 0; i < 8; ++i) out->push_back(static_cast<char>(v >> (8 * i)));
}

void put_varint(std::string* out, uint64_t v) {
  while (v >= 0x80) {
    out->push_back(static_cast<char>(v | 0x80));
    v >>= 7;
  }
  out->push_back(static_cast<char>(v));
}

uint32_t get_fixed32(const char* p) {
  uint32_t v = 0;
  for (int i = 3; i >= 0; --i) v = (v << 8) | static_cast<uint8_t>(p[i]);
  return v;
}

uint64_t get_fixed64(const char* p) {
  return static_cast<uint64_t>(get_fixed32(p)) | (static_cast<uint64_t>(get_fixed32(p + 4)) << 32);
}

// Decodes a varint of at most max_bits from [*p, end) and advances *p; false
// when it runs past `end`, has too many bytes or exceeds max_bits.
bool get_varint(const char** p, const char* end, int max_bits, uint64_t* v) {
  uint64_t result = 0;
  for (int shift = 0; shift < max_bits; shift += 7) {
    if (*p == end) return false;
    const uint64_t byte = static_cast<uint8_t>(*(*p)++);
    const uint64_t part = byte & 0x7f;
    if (max_bits - shift < 7 && (part >> (max_bits - shift)) != 0) return false;
    result |= part << shift;
    if ((byte & 0x80) == 0) {
      *v = result;
      return true;
    }
  }
  return false;
}

void put_handle(std::string* out, uint64_t offset, uint64_t size) {
  put_varint(out, offset);
  put_varint(out, size);
}

uint32_t block_crc(std::string_view contents, char type) {
  return crc32c::mask(crc32c::extend(crc32c::value(contents), &type, 1));
}

std::string printable(std::string_view key) {
  std::string out;
  for (char c : key) {
    auto u = static_cast<unsigned char>(c);
    if (u >= 0x20 && u < 0x7f && c != '\\') {
      out.push_back(c);
    } else {
      const char* hex = "0123456789abcdef";
      out += "\\x";
      out.push_back(hex[u >> 4]);
      out.push_back(hex[u & 15]);
    }
  }
  return "'" + out + "'";
}

std::string hex32(uint32_t v) {
  char buf[11];
  std::snprintf(buf, sizeof buf, "0x%08x", v);
  return buf;
}

// One block's entries with prefix-compressed keys and restart points.
class BlockBuilder {
 public:
  explicit BlockBuilder(int restart_interval) : restart_interval_(restart_interval) { restarts_.push_back(0); }
  bool empty() const { return buffer_.empty(); }
  size_t size_estimate() const { return buffer_.size() + restarts_.size() * 4 + 4; }

  void add(std::string_view key, std::string_view value) {
    size_t shared = 0;
    if (counter_ < restart_interval_) {
      size_t n = std::min(last_key_.size(), key.size());
      while (shared < n && last_key_[shared] == key[shared]) ++shared;
    } else {
      restarts_.push_back(static_cast<uint32_t>(buffer_.size()));
      counter_ = 0;
    }
    put_varint(&buffer_, shared);
    put_varint(&buffer_, key.size() - shared);
    put_varint(&buffer_, value.size());
    buffer_.append(key.substr(shared));
    buffer_.append(value);
    last_key_.assign(key);
    ++counter_;
  }

  // The block's bytes; the builder is reset for the next block.
  std::string finish() {
    std::string out = std::move(buffer_);
    for (uint32_t r : restarts_) put_fixed32(&out, r);
    put_fixed32(&out, static_cast<uint32_t>(restarts_.size()));
    buffer_.clear();
    restarts_.assign(1, 0);
    counter_ = 0;
    last_key_.clear();
    return out;
  }

 private:
  int restart_interval_;
  std::string buffer_;
  std::vector<uint32_t> restarts_;
  int counter_ = 0;
  std::string last_key_;
};

// LevelDB's bytewise comparator helpers: the shortest key k with
// start <= k < limit, and the shortest key >= key.
void shortest_separator(std::string* start, std::string_view limit) {
  size_t n = std::min(start->size(), limit.size()), i = 0;
  while (i < n && (*start)[i] == limit[i]) ++i;
  if (i >= n) return;  // one is a prefix of the other
  auto byte = static_cast<uint8_t>((*start)[i]);
  if (byte < 0xff && byte + 1 < static_cast<uint8_t>(limit[i])) {
    (*start)[i] = static_cast<char>(byte + 1);
    start->resize(i + 1);
  }
}

void short_successor(std::string* key) {
  for (size_t i = 0; i < key->size(); ++i) {
    auto byte = static_cast<uint8_t>((*key)[i]);
    if (byte != 0xff) {
      (*key)[i] = static_cast<char>(byte + 1);
      key->resize(i + 1);
      return;
    }
  }
}

// Reads the entries of one block's contents; `fail` reports damage.
class BlockReader {
 public:
  using Fail = std::function<void(const std::string&)>;

  BlockReader(std::string_view data, Fail fail) : data_(data), fail_(std::move(fail)) {
    if (data_.size() < 4) fail_("block of " + std::to_string(data_.size()) + " bytes has no restart count");
    num_restarts_ = get_fixed32(data_.data() + data_.size() - 4);
    if (num_restarts_ == 0 || num_restarts_ > (data_.size() - 4) / 4)
      fail_("block of " + std::to_string(data_.size()) + " bytes claims " + std::to_string(num_restarts_) +
            " restart points");
    limit_ = data_.size() - 4 - 4 * static_cast<size_t>(num_restarts_);
    uint32_t previous = 0;
    for (uint32_t i = 0; i < num_restarts_; ++i) {
      uint32_t r = restart(i);
      if ((i > 0 && r <= previous) || (r >= limit_ && !(r == 0 && limit_ == 0)))
        fail_("restart point " + std::to_string(i) + " at " + std::to_string(r) +
              " is out of order or past the entries (" + std::to_string(limit_) + " bytes)");
      previous = r;
    }
  }

  // Calls fn(key, value) for every entry; checks that restart points fall on
  // entries storing whole keys and that keys strictly increase.
  void for_each(const std::function<void(std::string_view, std::string_view)>& fn) const {
    std::string key, previous;
    std::string_view value;
    uint32_t next_restart = 0;
    for (size_t p = 0; p < limit_;) {
      bool is_restart = next_restart < num_restarts_ && restart(next_restart) == p;
      if (is_restart) ++next_restart;
      size_t next = decode(p, is_restart, &key, &value);
      if (p > 0 && key <= previous)
        fail_("entry at " + std::to_string(p) + ": key " + printable(key) + " does not follow " + printable(previous));
      fn(key, value);
      previous = key;
      p = next;
    }
    if (next_restart != num_restarts_ && limit_ > 0)
      fail_("restart point " + std::to_string(next_restart) + " does not start an entry");
  }

  // The value of `target`, if present: binary search over the restart
  // points, then a scan from the last one whose key is < target.
  std::optional<std::string_view> find(std::string_view target) const {
    if (limit_ == 0) return std::nullopt;
    uint32_t left = 0, right = num_restarts_ - 1;
    std::string key;
    std::string_view value;
    while (left < right) {
      uint32_t mid = (left + right + 1) / 2;
      key.clear();
      decode(restart(mid), true, &key, &value);
      if (key < target)
        left = mid;
      else
        right = mid - 1;
    }
    key.clear();
    for (size_t p = restart(left); p < limit_;) {
      p = decode(p, p == restart(left), &key, &value);
      if (key >= target) return key == target ? std::optional<std::string_view>(value) : std::nullopt;
    }
    return std::nullopt;
  }

 private:
  uint32_t restart(uint32_t i) const { return get_fixed32(data_.data() + limit_ + 4 * static_cast<size_t>(i)); }

  // Decodes the entry at p into *key (which holds the previous entry's key,
  // or anything at a restart point) and *value; returns the offset of the
  // next entry.
  size_t decode(size_t p, bool is_restart, std::string* key, std::string_view* value) const {
    const char* q = data_.data() + p;
    const char* end = data_.data() + limit_;
    uint64_t shared = 0, non_shared = 0, value_size = 0;
    if (!get_varint(&q, end, 32, &shared) || !get_varint(&q, end, 32, &non_shared) ||
        !get_varint(&q, end, 32, &value_size))
      fail_("entry at " + std::to_string(p) + ": bad length header");
    if ((is_restart && shared != 0) || shared > key->size())
      fail_("entry at " + std::to_string(p) + ": shares " + std::to_string(shared) + " bytes with a previous key of " +
            std::to_string(is_restart ? 0 : key->size()));
    if (non_shared > static_cast<uint64_t>(end - q) || value_size > static_cast<uint64_t>(end - q) - non_shared)
      fail_("entry at " + std::to_string(p) + ": key and value run past the entries");
    key->resize(shared);
    key->append(q, non_shared);
    *value = std::string_view(q + non_shared, value_size);
    return static_cast<size_t>(q + non_shared + value_size - data_.data());
  }

  std::string_view data_;
  Fail fail_;
  uint32_t num_restarts_ = 0;
  size_t limit_ = 0;  // end of the entries = start of the restart array
};

}  // namespace

// ---------------------------------------------------------------- builder

struct TableBuilder::Impl {
  TableOptions options;
  std::string out;
  BlockBuilder data, index;
  std::string last_key;
  uint64_t entries = 0;
  bool pending_index = false;  // the last data block awaits its index entry
  uint64_t pending_offset = 0, pending_size = 0;

  explicit Impl(TableOptions o) : options(o), data(o.restart_interval), index(1) {}

  // Appends a block and its trailer; returns its handle.
  std::pair<uint64_t, uint64_t> write_block(BlockBuilder& b) {
    std::string contents = b.finish();
    uint64_t offset = out.size();
    out += contents;
    out.push_back(kNoCompression);
    put_fixed32(&out, block_crc(contents, kNoCompression));
    return {offset, contents.size()};
  }

  void flush() {
    if (data.empty()) return;
    std::tie(pending_offset, pending_size) = write_block(data);
    pending_index = true;
  }

  void add_index_entry(std::string key) {
    std::string handle;
    put_handle(&handle, pending_offset, pending_size);
    index.add(key, handle);
    pending_index = false;
  }
};

TableBuilder::TableBuilder(TableOptions options) : impl_(std::make_unique<Impl>(options)) {
  HUB_CHECK(options.restart_interval >= 1 && options.block_size >= 1);
}

TableBuilder::~TableBuilder() = default;

void TableBuilder::add(std::string_view key, std::string_view value) {
  Impl& m = *impl_;
  if (m.entries > 0 && key <= std::string_view(m.last_key))
    throw_error(Code::kInvalidArgument,
                "table keys must strictly increase: " + printable(key) + " after " + printable(m.last_key));
  if (m.pending_index) {
    std::string separator = m.last_key;
    shortest_separator(&separator, key);
    m.add_index_entry(std::move(separator));
  }
  m.data.add(key, value);
  m.last_key.assign(key);
  ++m.entries;
  if (m.data.size_estimate() >= m.options.block_size) m.flush();
}

std::string TableBuilder::finish() {
  Impl& m = *impl_;
  m.flush();
  BlockBuilder meta_index(m.options.restart_interval);
  auto [meta_offset, meta_size] = m.write_block(meta_index);
  if (m.pending_index) {
    std::string successor = m.last_key;
    short_successor(&successor);
    m.add_index_entry(std::move(successor));
  }
  auto [index_offset, index_size] = m.write_block(m.index);
  std::string footer;
  put_handle(&footer, meta_offset, meta_size);
  put_handle(&footer, index_offset, index_size);
  footer.resize(kHandlesSize, '\0');
  put_fixed64(&footer, kTableMagic);
  m.out += footer;
  return std::move(m.out);
}

// ----------------------------------------------------------------- reader

Table Table::open(const std::string& path) { return Table(read_file_bytes(path), path); }

void Table::corrupt(const std::string& what) const {
  throw_error(Code::kCorruption, "'" + source_ + "': corrupt table: " + what);
}

std::string_view Table::block(const Handle& h, const char* what) const {
  const uint64_t data_end = bytes_.size() - kFooterSize;
  std::string where =
      std::string(what) + " at offset " + std::to_string(h.offset) + " (size " + std::to_string(h.size) + ")";
  if (h.size > data_end || kTrailerSize > data_end - h.size || h.offset > data_end - h.size - kTrailerSize)
    corrupt(where + " runs past the end of the blocks (" + std::to_string(data_end) + " bytes; truncated?)");
  std::string_view contents(bytes_.data() + h.offset, h.size);
  const char type = bytes_[h.offset + h.size];
  const uint32_t stored = get_fixed32(bytes_.data() + h.offset + h.size + 1);
  const uint32_t computed = block_crc(contents, type);
  if (stored != computed)
    corrupt(where + ": checksum mismatch (stored " + hex32(stored) + ", computed " + hex32(computed) + ")");
  if (type == kSnappyCompression)
    throw_error(Code::kUnimplemented, "'" + source_ + "': " + where +
                                          " is Snappy-compressed; hub reads uncompressed tables only (TensorFlow "
                                          "writes checkpoint indexes uncompressed)");
  if (type != kNoCompression)
    throw_error(Code::kUnimplemented, "'" + source_ + "': " + where + " uses unknown compression type " +
                                          std::to_string(static_cast<uint8_t>(type)));
  return contents;
}

Table::Table(std::string bytes, std::string source) : bytes_(std::move(bytes)), source_(std::move(source)) {
  if (bytes_.size() < kFooterSize)
    corrupt("file of " + std::to_string(bytes_.size()) + " bytes is shorter than the " + std::to_string(kFooterSize) +
            "-byte footer (truncated?)");
  const char* footer = bytes_.data() + bytes_.size() - kFooterSize;
  const uint64_t magic = get_fixed64(footer + kHandlesSize);
  if (magic != kTableMagic) {
    char buf[19];
    std::snprintf(buf, sizeof buf, "0x%016llx", static_cast<unsigned long long>(magic));
    corrupt(std::string("bad magic number ") + buf + " (not a LevelDB/TensorFlow table, or truncated)");
  }
  const char* p = footer;
  Handle meta, index;
  if (!get_varint(&p, footer + kHandlesSize, 64, &meta.offset) ||
      !get_varint(&p, footer + kHandlesSize, 64, &meta.size) ||
      !get_varint(&p, footer + kHandlesSize, 64, &index.offset) ||
      !get_varint(&p, footer + kHandlesSize, 64, &index.size))
    corrupt("footer handles do not decode");
  auto fail = [this](const std::string& what) { corrupt(what); };
  // The meta-index holds only optional filters; its checksum and encoding are
  // still verified.
  BlockReader(block(meta, "meta-index block"), [&](const std::string& w) {
    fail("meta-index block: " + w);
  }).for_each([](std::string_view, std::string_view) {});
  BlockReader(block(index, "index block"), [&](const std::string& w) {
    fail("index block: " + w);
  }).for_each([&](std::string_view key, std::string_view value) {
    IndexEntry e;
    e.key.assign(key);
    const char* q = value.data();
    const char* end = value.data() + value.size();
    if (!get_varint(&q, end, 64, &e.block.offset) || !get_varint(&q, end, 64, &e.block.size) || q != end)
      corrupt("index entry " + printable(key) + " holds no block handle");
    if (e.block.size > meta.offset || e.block.offset > meta.offset - e.block.size ||
        meta.offset - e.block.size - e.block.offset < kTrailerSize)
      corrupt("index entry " + printable(key) + " points at offset " + std::to_string(e.block.offset) + " (size " +
              std::to_string(e.block.size) + "), past the data blocks (" + std::to_string(meta.offset) + " bytes)");
    index_.push_back(std::move(e));
  });
}

std::optional<std::string> Table::get(std::string_view key) const {
  auto it = std::lower_bound(index_.begin(), index_.end(), key,
                             [](const IndexEntry& e, std::string_view k) { return e.key < k; });
  if (it == index_.end()) return std::nullopt;
  std::string where = "data block at offset " + std::to_string(it->block.offset);
  auto found =
      BlockReader(block(it->block, "data block"), [&](const std::string& w) { corrupt(where + ": " + w); }).find(key);
  if (!found) return std::nullopt;
  return std::string(*found);
}

void Table::for_each(const std::function<void(std::string_view, std::string_view)>& fn) const {
  std::string last;
  bool first = true;
  for (const IndexEntry& e : index_) {
    std::string where = "data block at offset " + std::to_string(e.block.offset);
    BlockReader(block(e.block, "data block"), [&](const std::string& w) {
      corrupt(where + ": " + w);
    }).for_each([&](std::string_view key, std::string_view value) {
      if (!first && key <= std::string_view(last))
        corrupt(where + ": key " + printable(key) + " does not follow " + printable(last));
      if (key > std::string_view(e.key))
        corrupt(where + ": key " + printable(key) + " is past its index entry " + printable(e.key));
      last.assign(key);
      first = false;
      fn(key, value);
    });
  }
}

}  // namespace hub::tf
