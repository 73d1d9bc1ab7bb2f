#include "hub/module/safetensors.h"

#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <limits>
#include <nlohmann/json.hpp>
#include <set>
#include <vector>

#include "hub/core/fileio.h"
#include "hub/core/json.h"
#include "hub/core/text.h"

namespace hub {
namespace {

using json = nlohmann::json;

// The reference implementation caps the header at 100 MB; so do we, so a
// hostile length cannot make us allocate without bound.
constexpr uint64_t kMaxHeaderBytes = 100'000'000;

[[noreturn]] void corrupt(const std::string& source, const std::string& what) {
  throw_error(Code::kCorruption, "safetensors file '" + source + "': " + what);
}

// Printable rendering of possibly non-UTF-8 bytes ("\xff" escapes).
std::string escaped(std::string_view s) { return printable(s); }

// "[2,3]" from parsed dimensions (never a dump of the untrusted JSON itself).
std::string dims_text(const std::vector<uint64_t>& dims) {
  std::string out = "[";
  for (size_t i = 0; i < dims.size(); ++i) {
    if (i) out += ',';
    out += std::to_string(dims[i]);
  }
  return out + "]";
}

DType parse_st_dtype(const std::string& name, const std::string& source, const std::string& tensor) {
  if (name == "F32") return DType::kFloat32;
  if (name == "I32") return DType::kInt32;
  if (name == "I64") return DType::kInt64;
  if (name == "U8") return DType::kUInt8;
  if (name == "BOOL") return DType::kBool;
  if (name == "I8") return DType::kInt8;
  static const std::set<std::string> kKnown = {"F64", "F16", "BF16", "I16", "U16", "U32", "U64", "F8_E4M3", "F8_E5M2"};
  if (kKnown.count(name))
    throw_error(Code::kInvalidArgument, "safetensors file '" + source + "': tensor '" + tensor + "' has dtype " + name +
                                            ", which hub does not support (F32, I32, I64, U8, I8, BOOL)");
  corrupt(source, "tensor '" + tensor + "' has unknown dtype '" + escaped(name) + "'");
}

uint64_t read_u64_le(const char* p) {
  uint64_t v = 0;
  for (int i = 7; i >= 0; --i) v = (v << 8) | static_cast<unsigned char>(p[i]);
  return v;
}

}  // namespace

std::string_view safetensors_dtype_name(DType dtype) {
  switch (dtype) {
    case DType::kFloat32:
      return "F32";
    case DType::kInt32:
      return "I32";
    case DType::kInt64:
      return "I64";
    case DType::kUInt8:
      return "U8";
    case DType::kBool:
      return "BOOL";
    case DType::kInt8:
      return "I8";
  }
  HUB_UNREACHABLE("bad dtype");
  return "";
}

std::string encode_safetensors(const std::map<std::string, Tensor>& tensors,
                               const std::map<std::string, std::string>& metadata) {
  // Wider elements first (then by name): the data section starts 8-byte
  // aligned, so every tensor is aligned to its element size and a mapped
  // reader can use it in place.
  std::vector<std::pair<const std::string*, const Tensor*>> order;
  for (const auto& [name, t] : tensors) order.emplace_back(&name, &t);
  std::stable_sort(order.begin(), order.end(), [](const auto& a, const auto& b) {
    const size_t sa = a.second->defined() ? dtype_size(a.second->dtype()) : 0;
    const size_t sb = b.second->defined() ? dtype_size(b.second->dtype()) : 0;
    return sa > sb;
  });
  json header = json::object();
  uint64_t offset = 0;
  for (const auto& [name_ptr, t_ptr] : order) {
    const std::string& name = *name_ptr;
    const Tensor& t = *t_ptr;
    if (name == "__metadata__") throw_error(Code::kInvalidArgument, "safetensors: '__metadata__' cannot name a tensor");
    if (invalid_utf8_at(name) != std::string_view::npos)
      throw_error(Code::kInvalidArgument, "safetensors: tensor name '" + escaped(name) + "' is not UTF-8");
    if (!t.defined() || t.device() != Device::kCPU)
      throw_error(Code::kInvalidArgument, "safetensors: tensor '" + name + "' is undefined or not on the CPU");
    json entry;
    entry["dtype"] = std::string(safetensors_dtype_name(t.dtype()));
    entry["shape"] = t.shape().dims();
    entry["data_offsets"] = {offset, offset + t.nbytes()};
    header[name] = std::move(entry);
    offset += t.nbytes();
  }
  for (const auto& [k, v] : metadata)
    if (invalid_utf8_at(k) != std::string_view::npos || invalid_utf8_at(v) != std::string_view::npos)
      throw_error(Code::kInvalidArgument, "safetensors: metadata entry '" + escaped(k) + "' is not UTF-8");
  if (!metadata.empty()) header["__metadata__"] = metadata;
  std::string text = header.dump();
  text.append((8 - text.size() % 8) % 8, ' ');
  std::string out;
  out.reserve(8 + text.size() + offset);
  uint64_t n = text.size();
  for (int i = 0; i < 8; ++i) out += static_cast<char>((n >> (8 * i)) & 0xff);
  out += text;
  for (const auto& [name, t] : order) out.append(static_cast<const char*>(t->raw_data()), t->nbytes());
  return out;
}

namespace {

// One tensor of a validated file: where its bytes are, relative to the start
// of the file.
struct ParsedTensor {
  std::string name;
  TensorSpec spec;
  uint64_t offset;
};
struct ParsedFile {
  std::vector<ParsedTensor> tensors;
  std::map<std::string, std::string> metadata;
};

// The one parser of the format: validates every rule of the header comment
// against `bytes` (the whole file) without copying tensor data.
ParsedFile parse_safetensors(std::string_view bytes, const std::string& source) {
  if (bytes.size() < 8)
    corrupt(source, "file is " + std::to_string(bytes.size()) + " bytes, shorter than the 8-byte header length");
  uint64_t n = read_u64_le(bytes.data());
  if (n > bytes.size() - 8)
    corrupt(source, "header length " + std::to_string(n) + " is larger than the file (" + std::to_string(bytes.size()) +
                        " bytes)");
  if (n > kMaxHeaderBytes) corrupt(source, "header length " + std::to_string(n) + " exceeds the 100 MB limit");
  std::string_view text = bytes.substr(8, n);
  std::string_view buffer = bytes.substr(8 + n);
  if (size_t bad = invalid_utf8_at(text); bad != std::string_view::npos) {
    size_t from = bad >= 24 ? bad - 24 : 0;
    corrupt(source, "header is not valid UTF-8 at byte " + std::to_string(bad) + " (near \"" +
                        escaped(text.substr(from, 40)) + "\"), e.g. a non-UTF-8 tensor name");
  }
  if (text.empty() || text[0] != '{') corrupt(source, "header does not start with '{'");

  // Bounded nesting and unique names (nlohmann would keep the last of a
  // duplicate silently); the message names the file.
  json header;
  try {
    header = parse_json(text, "header");
  } catch (const Error& e) {
    corrupt(source, e.message());
  }
  if (!header.is_object()) corrupt(source, "header is not a JSON object");

  ParsedFile out;
  struct Span {
    uint64_t begin, end;
    std::string name;
  };
  std::vector<Span> spans;
  for (auto& [name, entry] : header.items()) {
    if (name == "__metadata__") {
      if (!entry.is_object()) corrupt(source, "__metadata__ is not an object");
      for (auto& [k, v] : entry.items()) {
        if (!v.is_string()) corrupt(source, "__metadata__ value of '" + escaped(k) + "' is not a string");
        out.metadata[k] = v.get<std::string>();
      }
      continue;
    }
    // Message parts, formatted only for an error.
    const std::string& tensor_name = name;
    auto where = [&] { return "tensor '" + escaped(tensor_name) + "'"; };
    if (!entry.is_object()) corrupt(source, where() + " is not an object");
    for (auto& [k, v] : entry.items()) {
      (void)v;
      if (k != "dtype" && k != "shape" && k != "data_offsets")
        corrupt(source, where() + " has unknown field '" + escaped(k) + "'");
    }
    if (!entry.contains("dtype") || !entry["dtype"].is_string()) corrupt(source, where() + " has no string 'dtype'");
    if (!entry.contains("shape") || !entry["shape"].is_array()) corrupt(source, where() + " has no 'shape' array");
    if (!entry.contains("data_offsets") || !entry["data_offsets"].is_array() || entry["data_offsets"].size() != 2)
      corrupt(source, where() + " has no 'data_offsets' [begin, end]");
    DType dtype = parse_st_dtype(entry["dtype"].get<std::string>(), source, escaped(name));
    std::vector<int64_t> dims;
    std::vector<uint64_t> raw_dims;  // as written, for messages
    uint64_t bytes_needed = dtype_size(dtype);
    bool overflow = false;
    for (const json& d : entry["shape"]) {
      if (!d.is_number_unsigned())
        corrupt(source, where() + " has a shape entry that is not a non-negative integer (a " + d.type_name() +
                            " at index " + std::to_string(raw_dims.size()) + ")");
      uint64_t v = d.get<uint64_t>();
      raw_dims.push_back(v);
      if (v > static_cast<uint64_t>(std::numeric_limits<int64_t>::max())) overflow = true;
      if (v != 0 && bytes_needed > std::numeric_limits<uint64_t>::max() / v) overflow = true;
      bytes_needed *= v;
      dims.push_back(static_cast<int64_t>(v));
    }
    if (overflow || bytes_needed > static_cast<uint64_t>(std::numeric_limits<int64_t>::max()))
      corrupt(source,
              where() + ": shape " + dims_text(raw_dims) + " x " + std::string(dtype_name(dtype)) + " size overflows");
    const json& offs = entry["data_offsets"];
    if (!offs[0].is_number_unsigned() || !offs[1].is_number_unsigned())
      corrupt(source, where() + " has data_offsets that are not non-negative integers (" + offs[0].type_name() + ", " +
                          offs[1].type_name() + ")");
    uint64_t begin = offs[0].get<uint64_t>(), end = offs[1].get<uint64_t>();
    if (begin > end || end > buffer.size())
      corrupt(source, where() + " has data_offsets [" + std::to_string(begin) + ", " + std::to_string(end) +
                          "] out of range of the " + std::to_string(buffer.size()) + "-byte buffer");
    if (end - begin != bytes_needed)
      corrupt(source, where() + " has " + std::to_string(end - begin) + " bytes but shape " + dims_text(raw_dims) +
                          " x " + std::string(dtype_name(dtype)) + " needs " + std::to_string(bytes_needed));
    spans.push_back({begin, end, name});
    out.tensors.push_back({name, {dtype, Shape(std::move(dims))}, 8 + n + begin});
  }
  std::sort(spans.begin(), spans.end(),
            [](const Span& a, const Span& b) { return a.begin != b.begin ? a.begin < b.begin : a.end < b.end; });
  uint64_t pos = 0;
  for (const Span& s : spans) {
    if (s.begin < pos)
      corrupt(source, "tensor '" + escaped(s.name) + "' [" + std::to_string(s.begin) + ", " + std::to_string(s.end) +
                          ") overlaps the tensor before it (which ends at " + std::to_string(pos) + ")");
    if (s.begin > pos)
      corrupt(source, "gap in the byte buffer before tensor '" + escaped(s.name) + "' (bytes " + std::to_string(pos) +
                          " to " + std::to_string(s.begin) + " belong to no tensor)");
    pos = s.end;
  }
  if (pos != buffer.size())
    corrupt(source, "bytes " + std::to_string(pos) + " to " + std::to_string(buffer.size()) +
                        " at the end of the buffer belong to no tensor");
  for (const ParsedTensor& t : out.tensors) {
    if (t.spec.dtype != DType::kBool) continue;
    const auto* p = reinterpret_cast<const uint8_t*>(bytes.data() + t.offset);
    const int64_t count = t.spec.shape.num_elements();
    for (int64_t i = 0; i < count; ++i)
      if (p[i] > 1)
        corrupt(source, "tensor '" + escaped(t.name) + "' (BOOL) has byte value " + std::to_string(p[i]) +
                            " at element " + std::to_string(i) + " (must be 0 or 1)");
  }
  return out;
}

}  // namespace

SafetensorsContents decode_safetensors(std::string_view bytes, const std::string& source) {
  ParsedFile parsed = parse_safetensors(bytes, source);
  SafetensorsContents out;
  out.metadata = std::move(parsed.metadata);
  for (const ParsedTensor& p : parsed.tensors) {
    Tensor t(p.spec.dtype, p.spec.shape);
    if (t.nbytes() > 0) std::memcpy(t.raw_data(), bytes.data() + p.offset, t.nbytes());
    out.tensors.emplace(p.name, std::move(t));
  }
  return out;
}

void write_safetensors(const std::string& path, const std::map<std::string, Tensor>& tensors,
                       const std::map<std::string, std::string>& metadata) {
  write_file_atomic(path, encode_safetensors(tensors, metadata));
}

SafetensorsContents map_safetensors(const std::string& path) {
  struct stat st {};
  Fd fd = open_for_reading(path, &st);
  if (!S_ISREG(st.st_mode)) throw_error(Code::kInvalidArgument, "'" + path + "' is not a regular file");
  const size_t size = static_cast<size_t>(st.st_size);
  // MAP_PRIVATE + PROT_WRITE: a write through a tensor copies the page and
  // never reaches the file. An empty file cannot be mapped; the parser reports it.
  void* addr = size == 0 ? nullptr : ::mmap(nullptr, size, PROT_READ | PROT_WRITE, MAP_PRIVATE, fd.get(), 0);
  int err = errno;
  fd.reset();
  if (addr == MAP_FAILED) throw_error(Code::kIOError, "cannot map '" + path + "': " + std::strerror(err));
  auto mapping = std::make_shared<Storage>();
  mapping->data = addr;
  mapping->bytes = size;
  if (addr) mapping->release = [](Storage& s) { ::munmap(s.data, s.bytes); };

  std::string_view bytes(static_cast<const char*>(addr), size);
  ParsedFile parsed = parse_safetensors(bytes, path);
  SafetensorsContents out;
  out.metadata = std::move(parsed.metadata);
  for (const ParsedTensor& p : parsed.tensors) {
    const size_t align = dtype_size(p.spec.dtype);
    if (reinterpret_cast<uintptr_t>(bytes.data() + p.offset) % align == 0) {
      out.tensors.emplace(p.name, Tensor(p.spec.dtype, p.spec.shape, mapping, p.offset));
    } else {
      // Only a file whose tensors are not in our writer's order (a U8/BOOL
      // tensor of odd size before an F32) misaligns one; copy just that one.
      Tensor t(p.spec.dtype, p.spec.shape);
      std::memcpy(t.raw_data(), bytes.data() + p.offset, t.nbytes());
      out.tensors.emplace(p.name, std::move(t));
    }
  }
  return out;
}

}  // namespace hub
