#include "hub/resolver/unpack.h"

#include <archive.h>
#include <archive_entry.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>

#include <cerrno>
#include <climits>
#include <cstdlib>
#include <cstring>
#include <map>
#include <memory>
#include <random>
#include <set>
#include <string_view>
#include <vector>

#include "hub/core/digest.h"
#include "hub/core/error.h"
#include "hub/core/fd.h"
#include "hub/core/interrupt.h"
#include "hub/core/text.h"

namespace fs = std::filesystem;

namespace hub::resolver {
namespace {

std::string errno_text(int err) { return std::strerror(err); }

// Deeper paths are refused: no module needs them, and they strain PATH_MAX.
constexpr size_t kMaxPathComponents = 64;

std::string human_bytes(uint64_t n) {
  const char* units[] = {"B", "KiB", "MiB", "GiB", "TiB"};
  double v = static_cast<double>(n);
  int u = 0;
  while (v >= 1024 && u < 4) {
    v /= 1024;
    ++u;
  }
  char buf[64];
  std::snprintf(buf, sizeof buf, u == 0 ? "%.0f %s" : "%.1f %s", v, units[u]);
  return buf;
}

struct ArchiveDeleter {
  void operator()(struct archive* a) const { archive_read_free(a); }
};
using ArchivePtr = std::unique_ptr<struct archive, ArchiveDeleter>;

// Largest decompressed stream accepted: the entries' data plus generous room
// for headers (pax headers carry long names) and padding.
uint64_t max_stream_bytes(const UnpackLimits& limits) {
  return limits.max_total_bytes + limits.max_entries * 4096 + (uint64_t{16} << 20);
}

// The tar stream of an archive file, fed to libarchive through callbacks.
// A gzip file is inflated here with zlib rather than by libarchive, whose
// gzip filter neither checks the CRC-32/ISIZE trailer nor reads past the tar
// end marker: here every member's deflate data, CRC-32 and length are
// checked by zlib, concatenated members (RFC 1952) are allowed, and any other
// byte after the last member is refused. finish() reads the stream to its
// end, so damage after the tar end marker is found too. A plain tar file is
// passed through unchanged.
class TarStream {
 public:
  TarStream(const fs::path& path, std::string name, uint64_t max_bytes)
      : name_(std::move(name)), max_bytes_(max_bytes), in_(1 << 16), out_(1 << 16) {
    try {
      fd_ = open_fd(path, O_RDONLY);
    } catch (const Error& e) {
      throw_error(e.code() == Code::kNotFound ? Code::kNotFound : Code::kIOError, name_ + ": " + e.message());
    }
    fill();
    gzip_ = z_.avail_in >= 2 && in_[0] == 0x1f && in_[1] == 0x8b;
    if (gzip_) {
      if (inflateInit2(&z_, 15 + 16) != Z_OK) throw_error(Code::kInternal, "inflateInit2 failed");
      z_open_ = true;
    }
  }
  ~TarStream() {
    if (z_open_) inflateEnd(&z_);
  }
  TarStream(const TarStream&) = delete;
  TarStream& operator=(const TarStream&) = delete;

  // Attaches libarchive (tar formats only; decompression is ours).
  ArchivePtr open() {
    ArchivePtr a(archive_read_new());
    if (!a) throw_error(Code::kInternal, "archive_read_new failed");
    archive_read_support_format_tar(a.get());
    if (archive_read_open(a.get(), this, nullptr, &TarStream::read_cb, nullptr) != ARCHIVE_OK) {
      fail_if_broken();
      const char* e = archive_error_string(a.get());
      throw_error(Code::kCorruption, name_ + ": cannot read archive: " + (e ? e : "unknown error"));
    }
    return a;
  }

  // Throws the stream's own error (gzip damage, I/O) if there was one.
  void fail_if_broken() const {
    if (!error_.empty()) throw_error(error_code_, name_ + ": " + error_);
  }

  // Reads what libarchive left (tar padding, the gzip trailer) to the end,
  // checking it as the rest was checked.
  void finish() {
    const void* buf;
    while (next(&buf) > 0) {
    }
    fail_if_broken();
  }

 private:
  static la_ssize_t read_cb(struct archive* a, void* self, const void** buf) {
    auto* s = static_cast<TarStream*>(self);
    la_ssize_t n = s->next(buf);
    if (n < 0) archive_set_error(a, EIO, "%s", s->error_.c_str());
    return n;
  }

  // Refills the input buffer when it is empty; sets eof_ at the end of the file.
  bool fill() {
    if (z_.avail_in > 0 || eof_) return z_.avail_in > 0;
    for (;;) {
      ssize_t n = ::read(fd_.get(), in_.data(), in_.size());
      if (n < 0 && errno == EINTR) continue;
      if (n < 0) return broken(Code::kIOError, std::string("read failed: ") + std::strerror(errno));
      if (n == 0) {
        eof_ = true;
        return false;
      }
      z_.next_in = in_.data();
      z_.avail_in = static_cast<uInt>(n);
      return true;
    }
  }

  bool broken(Code code, std::string what) {
    if (error_.empty()) {
      error_code_ = code;
      error_ = std::move(what);
    }
    return false;
  }

  // The next block of the tar stream: > 0 bytes, 0 at its (checked) end, -1 on error.
  la_ssize_t next(const void** buf) {
    if (!error_.empty()) return -1;
    if (!gzip_) {
      if (!fill()) return error_.empty() ? 0 : -1;
      *buf = z_.next_in;
      la_ssize_t n = z_.avail_in;
      z_.avail_in = 0;
      return n;
    }
    for (;;) {
      if (member_ended_) {
        // Another member, or the end; anything else is trailing data.
        fill();
        if (!error_.empty()) return -1;
        if (z_.avail_in == 0) return 0;
        while (z_.avail_in < 2 && !eof_) {
          // The magic straddles a buffer boundary: keep the byte, read on.
          unsigned char first = *z_.next_in;
          in_[0] = first;
          ssize_t n = ::read(fd_.get(), in_.data() + 1, in_.size() - 1);
          if (n < 0 && errno == EINTR) continue;
          if (n < 0) return broken(Code::kIOError, std::string("read failed: ") + std::strerror(errno)), -1;
          if (n == 0) eof_ = true;
          z_.next_in = in_.data();
          z_.avail_in = 1 + static_cast<uInt>(n);
        }
        if (z_.avail_in < 2 || z_.next_in[0] != 0x1f || z_.next_in[1] != 0x8b) {
          // Not another member: only NUL padding may follow (tar writers pad
          // their last block, and gzip accepts that too).
          return only_padding_left() ? 0 : -1;
        }
        inflateReset(&z_);
        member_ended_ = false;
      }
      if (!fill() && !error_.empty()) return -1;
      z_.next_out = out_.data();
      z_.avail_out = static_cast<uInt>(out_.size());
      const uInt had_in = z_.avail_in;
      int rc = inflate(&z_, Z_NO_FLUSH);
      read_total_ += had_in - z_.avail_in;
      const size_t produced = out_.size() - z_.avail_out;
      if (rc == Z_STREAM_END) {
        member_ended_ = true;
      } else if (rc == Z_DATA_ERROR) {
        std::string why = z_.msg ? z_.msg : "invalid data";
        if (why == "incorrect data check")
          why = "CRC-32 of the decompressed data does not match the trailer (the archive is damaged)";
        else if (why == "incorrect length check")
          why = "length of the decompressed data does not match the trailer (ISIZE)";
        else
          why = "corrupt compressed data (" + why + ")";
        return broken(Code::kCorruption, "gzip stream: " + why), -1;
      } else if (rc == Z_MEM_ERROR) {
        return broken(Code::kResourceExhausted, "gzip stream: out of memory"), -1;
      } else if (rc != Z_OK && rc != Z_BUF_ERROR) {
        return broken(Code::kCorruption, "gzip stream: inflate error " + std::to_string(rc)), -1;
      }
      produced_ += produced;
      if (produced_ > max_bytes_) {
        return broken(Code::kResourceExhausted,
                      "gzip stream: decompresses to more than " + human_bytes(max_bytes_) + " (archive bomb?)"),
               -1;
      }
      if (produced > 0) {
        *buf = out_.data();
        return static_cast<la_ssize_t>(produced);
      }
      if (!member_ended_ && z_.avail_in == 0 && eof_) {
        return broken(Code::kCorruption, "gzip stream: truncated (the file ends inside the compressed data)"), -1;
      }
    }
  }

  // True when the rest of the file is NUL bytes; else records the error.
  bool only_padding_left() {
    uint64_t nonzero_at = 0, seen = 0;
    bool found = false;
    for (;;) {
      for (uInt i = 0; i < z_.avail_in && !found; ++i) {
        if (z_.next_in[i] != 0) {
          found = true;
          nonzero_at = seen + i;
        }
      }
      seen += z_.avail_in;
      z_.avail_in = 0;
      if (found || !fill()) break;
    }
    if (!error_.empty()) return false;
    if (!found) return true;
    return broken(Code::kCorruption, "gzip stream: trailing data after the end of the compressed stream (" +
                                         std::to_string(seen - nonzero_at) + "+ bytes from offset " +
                                         std::to_string(read_total_ + nonzero_at) + ")");
  }

  std::string name_;
  uint64_t max_bytes_;
  Fd fd_;
  z_stream z_{};
  bool z_open_ = false;
  bool gzip_ = false;
  bool eof_ = false;
  bool member_ended_ = false;
  uint64_t read_total_ = 0;  // compressed bytes consumed by inflate
  uint64_t produced_ = 0;
  std::vector<unsigned char> in_, out_;
  std::string error_;
  Code error_code_ = Code::kCorruption;
};

std::string archive_error(struct archive* a) {
  const char* s = archive_error_string(a);
  return s ? s : "unknown libarchive error";
}

// Splits on '/', dropping empty and "." components.
std::vector<std::string> split_path(std::string_view p) {
  std::vector<std::string> parts;
  size_t i = 0;
  while (i <= p.size()) {
    size_t j = p.find('/', i);
    if (j == std::string_view::npos) j = p.size();
    std::string_view c = p.substr(i, j - i);
    if (!c.empty() && c != ".") parts.emplace_back(c);
    i = j + 1;
  }
  return parts;
}

std::string join(const std::vector<std::string>& parts, size_t n) {
  std::string out;
  for (size_t i = 0; i < n; ++i) {
    if (i) out += '/';
    out += parts[i];
  }
  return out;
}

const char* type_name(mode_t type) {
  switch (type) {
    case AE_IFCHR:
      return "character device";
    case AE_IFBLK:
      return "block device";
    case AE_IFIFO:
      return "FIFO";
    case AE_IFSOCK:
      return "socket";
    default:
      return "unknown file type";
  }
}

enum class Kind { kSkip, kDir, kFile, kSymlink, kHardlink };

struct CheckedEntry {
  Kind kind = Kind::kSkip;
  std::string path;    // normalised relative path
  std::string target;  // symlink target (verbatim) or hard link target (normalised)
  uint64_t size = 0;
  bool executable = false;
};

// Applies every per-entry rule and the caps; keeps the state the rules need.
class EntryChecker {
 public:
  EntryChecker(std::string name, const UnpackLimits& limits) : name_(std::move(name)), limits_(limits) {}

  CheckedEntry check(struct archive_entry* e) {
    const char* raw_c = archive_entry_pathname(e);
    const std::string raw = raw_c ? raw_c : "";
    const std::string shown = printable(raw, 300);  // names go into messages escaped
    if (++entries_ > limits_.max_entries) {
      fail(Code::kResourceExhausted, "more than " + std::to_string(limits_.max_entries) + " entries (archive bomb?)");
    }
    CheckedEntry out;
    out.path = normalize(raw, "entry");
    const char* hl = archive_entry_hardlink(e);
    mode_t type = archive_entry_filetype(e);
    if (out.path.empty()) {
      if (hl == nullptr && type == AE_IFDIR) return out;  // "./" itself
      fail(Code::kCorruption, "entry with an empty path");
    }
    std::vector<std::string> parts = split_path(out.path);
    for (size_t i = 1; i < parts.size(); ++i) {
      std::string prefix = join(parts, i);
      if (symlinks_.count(prefix)) {
        fail(Code::kPermissionDenied, "unsafe entry '" + shown + "': path passes through symlink '" + prefix + "'");
      }
      if (files_.count(prefix)) {
        fail(Code::kCorruption, "entry '" + shown + "' is below regular file '" + prefix + "'");
      }
    }
    if (hl != nullptr) {
      out.kind = Kind::kHardlink;
      std::string target = normalize(hl, "hard link target of '" + shown + "'");
      if (!files_.count(target)) {
        fail(Code::kPermissionDenied, "unsafe entry '" + shown + "': hard link to '" + printable(hl, 300) +
                                          "', which is not a regular file earlier in the archive");
      }
      // A hard link entry with a body (pax allows one) would, extracted by
      // other tools, overwrite the file it links to: two readers, two trees.
      if (archive_entry_size(e) > 0) {
        fail(Code::kPermissionDenied, "hard link '" + shown + "' carries " + std::to_string(archive_entry_size(e)) +
                                          " bytes of data; a hard link entry must not (other tools would write "
                                          "them into '" +
                                          printable(hl, 300) + "')");
      }
      out.target = target;
    } else if (type == AE_IFREG) {
      out.kind = Kind::kFile;
      int64_t size = archive_entry_size(e);
      if (size < 0) fail(Code::kCorruption, "entry '" + shown + "' has a negative size");
      out.size = static_cast<uint64_t>(size);
      out.executable = (archive_entry_perm(e) & 0111) != 0;
      add_bytes(out.size, shown);
    } else if (type == AE_IFDIR) {
      out.kind = Kind::kDir;
    } else if (type == AE_IFLNK) {
      out.kind = Kind::kSymlink;
      const char* t = archive_entry_symlink(e);
      std::string target = t ? t : "";
      if (target.empty()) fail(Code::kCorruption, "symlink '" + shown + "' has an empty target");
      check_name(target, shown, "symlink target");
      check_symlink_target(shown, parts, target);
      out.target = target;
    } else {
      fail(Code::kPermissionDenied, std::string("unsafe entry '") + shown + "': " + type_name(type) + " not allowed");
    }
    if (out.kind != Kind::kDir) {
      if (!names_.insert(out.path).second || dirs_.count(out.path)) {
        fail(Code::kCorruption, "duplicate entry '" + shown + "'");
      }
    } else if (names_.count(out.path)) {
      fail(Code::kCorruption, "duplicate entry '" + shown + "'");
    }
    // Case-insensitive file systems would merge these (one silently replacing
    // the other): the entry and each folder it implies.
    for (size_t i = 1; i <= parts.size(); ++i) {
      const std::string name = join(parts, i);
      auto [it, fresh] = folded_.emplace(to_lower(name), name);
      if (!fresh && it->second != name) {
        fail(Code::kCorruption, "entry '" + printable(name, 300) + "' and entry '" + printable(it->second, 300) +
                                    "' differ only in case (one would replace the other on a case-insensitive "
                                    "file system)");
      }
    }
    if (out.kind == Kind::kFile || out.kind == Kind::kHardlink) files_.insert(out.path);
    if (out.kind == Kind::kSymlink) symlinks_.insert(out.path);
    if (out.kind == Kind::kDir) dirs_.insert(out.path);
    for (size_t i = 1; i < parts.size(); ++i) dirs_.insert(join(parts, i));
    return out;
  }

  // Data actually produced beyond what headers declared (a lying header).
  void add_bytes(uint64_t n, const std::string& raw) {
    if (n > limits_.max_total_bytes || total_ > limits_.max_total_bytes - n) {
      fail(Code::kResourceExhausted, "entry '" + raw + "' (" + human_bytes(n) +
                                         ") takes the unpacked size over the limit of " +
                                         human_bytes(limits_.max_total_bytes) + " (archive bomb?)");
    }
    total_ += n;
  }

  [[noreturn]] void fail(Code code, const std::string& what) const { throw_error(code, name_ + ": " + what); }

  uint64_t entries() const { return entries_; }
  uint64_t total() const { return total_; }
  const std::set<std::string>& symlinks() const { return symlinks_; }
  const std::set<std::string>& files() const { return files_; }
  const std::set<std::string>& dirs() const { return dirs_; }
  const std::set<std::string>& names() const { return names_; }

 private:
  std::string normalize(const std::string& raw, const std::string& what) const {
    const std::string shown = printable(raw, 300);
    check_name(raw, shown, what);
    if (!raw.empty() && raw[0] == '/') {
      fail(Code::kPermissionDenied, "unsafe entry '" + shown + "': absolute path (" + what + ")");
    }
    std::vector<std::string> parts = split_path(raw);
    for (const std::string& p : parts) {
      if (p == "..") {
        fail(Code::kPermissionDenied, "unsafe entry '" + shown + "': '..' path component (" + what + ")");
      }
    }
    if (parts.size() > kMaxPathComponents) {
      fail(Code::kPermissionDenied, "unsafe entry '" + shown + "': " + std::to_string(parts.size()) +
                                        " path components (the limit is " + std::to_string(kMaxPathComponents) + ")");
    }
    return join(parts, parts.size());
  }

  // Names every file system and terminal takes the same way: no control
  // characters (they forge output), no backslashes (a separator elsewhere),
  // valid UTF-8 (else tools disagree on what the name is).
  void check_name(const std::string& raw, const std::string& shown, const std::string& what) const {
    for (unsigned char c : raw) {
      if (c < 0x20 || c == 0x7f)
        fail(Code::kPermissionDenied, "unsafe entry '" + shown + "': control character in the " + what + " name");
      if (c == '\\') fail(Code::kPermissionDenied, "unsafe entry '" + shown + "': backslash in the " + what + " name");
    }
    if (invalid_utf8_at(raw) != std::string::npos)
      fail(Code::kPermissionDenied, "unsafe entry '" + shown + "': the " + what + " name is not valid UTF-8");
  }

  void check_symlink_target(const std::string& shown, const std::vector<std::string>& link_parts,
                            const std::string& target) const {
    if (target[0] == '/') {
      fail(Code::kPermissionDenied,
           "unsafe entry '" + shown + "': symlink to absolute path '" + printable(target, 300) + "'");
    }
    // Resolve lexically from the link's directory; must never climb above the root.
    std::vector<std::string> at(link_parts.begin(), link_parts.end() - 1);
    for (const std::string& c : split_path(target)) {
      if (c == "..") {
        if (at.empty()) {
          fail(Code::kPermissionDenied,
               "unsafe entry '" + shown + "': symlink to '" + printable(target, 300) + "' points outside the module");
        }
        at.pop_back();
      } else {
        at.push_back(c);
      }
    }
  }

  std::string name_;
  UnpackLimits limits_;
  uint64_t entries_ = 0;
  uint64_t total_ = 0;
  std::set<std::string> symlinks_, files_, dirs_, names_;
  std::map<std::string, std::string> folded_;  // lower-cased path -> as first seen
};

// Removes `dest` on scope exit unless released.
class RemoveOnFailure {
 public:
  explicit RemoveOnFailure(fs::path p) : path_(std::move(p)) {}
  ~RemoveOnFailure() {
    if (!path_.empty()) {
      std::error_code ec;
      fs::remove_all(path_, ec);
    }
  }
  void release() { path_.clear(); }

 private:
  fs::path path_;
};

std::string random_suffix() {
  static thread_local std::mt19937_64 rng(std::random_device{}() ^ static_cast<uint64_t>(::getpid()) << 20);
  char buf[32];
  std::snprintf(buf, sizeof buf, "%016llx", static_cast<unsigned long long>(rng()));
  return buf;
}

bool is_real_dir(const fs::path& p) {
  struct stat st;
  return ::lstat(p.c_str(), &st) == 0 && S_ISDIR(st.st_mode);
}

bool has_module_pb(const fs::path& dir) {
  struct stat st;
  return ::lstat((dir / "module.pb").c_str(), &st) == 0;
}

// `tar czf m.tar.gz my_module/` wraps the module in one directory: move its
// contents up so the module directory is always `dest`.
void hoist_single_top_dir(const fs::path& dest) {
  if (has_module_pb(dest)) return;
  fs::path only;
  int count = 0;
  for (const auto& it : fs::directory_iterator(dest)) {
    only = it.path();
    if (++count > 1) return;
  }
  if (count != 1 || !is_real_dir(only) || !has_module_pb(only)) return;
  fs::path tmp = dest.parent_path() / (dest.filename().string() + ".hoist-" + random_suffix());
  fs::rename(only, tmp);
  fs::remove(dest);
  fs::rename(tmp, dest);
}

// The kernel's view: every symlink must resolve to something inside `root`.
void check_symlinks_resolve_inside(const fs::path& root, const EntryChecker& checker, const std::string& name) {
  if (checker.symlinks().empty()) return;
  char buf[PATH_MAX];
  if (!::realpath(root.c_str(), buf)) {
    throw_error(Code::kIOError, name + ": realpath(" + root.string() + "): " + errno_text(errno));
  }
  std::string real_root = buf;
  for (const auto& it : fs::recursive_directory_iterator(root)) {
    if (!it.is_symlink()) continue;
    std::string rel = it.path().lexically_relative(root).string();
    if (!::realpath(it.path().c_str(), buf)) {
      throw_error(Code::kPermissionDenied, name + ": unsafe entry '" + rel + "': symlink to '" +
                                               fs::read_symlink(it.path()).string() +
                                               "' does not resolve inside the module (" + errno_text(errno) + ")");
    }
    std::string real = buf;
    if (real != real_root && real.compare(0, real_root.size() + 1, real_root + "/") != 0) {
      throw_error(Code::kPermissionDenied, name + ": unsafe entry '" + rel + "': symlink to '" +
                                               fs::read_symlink(it.path()).string() + "' points outside the module");
    }
  }
}

void make_dir(const fs::path& p, const std::string& name, const std::string& rel) {
  if (::mkdir(p.c_str(), 0755) == 0) return;
  int err = errno;
  if (err == EEXIST && is_real_dir(p)) return;
  throw_error(err == EEXIST ? Code::kCorruption : Code::kIOError,
              name + ": cannot create directory '" + rel + "': " + errno_text(err));
}

void make_parents(const fs::path& dest, const std::string& rel, std::set<std::string>& made, const std::string& name) {
  std::vector<std::string> parts = split_path(rel);
  for (size_t i = 1; i < parts.size(); ++i) {
    std::string prefix = join(parts, i);
    if (made.count(prefix)) continue;
    make_dir(dest / prefix, name, prefix);
    made.insert(prefix);
  }
}

void extract_file(struct archive* a, TarStream& stream, const fs::path& dest, const CheckedEntry& ce,
                  EntryChecker& checker, const std::string& name) {
  fs::path full = dest / ce.path;
  int raw = ::open(full.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, ce.executable ? 0755 : 0644);
  if (raw < 0) {
    int err = errno;
    throw_error(err == EEXIST ? Code::kCorruption : Code::kIOError,
                name + ": cannot create '" + ce.path + "': " + errno_text(err));
  }
  Fd fd(raw);
  uint64_t end = 0;
  for (;;) {
    const void* buf = nullptr;
    size_t size = 0;
    la_int64_t offset = 0;
    int r = archive_read_data_block(a, &buf, &size, &offset);
    if (r == ARCHIVE_EOF) break;
    if (r < ARCHIVE_WARN) {
      stream.fail_if_broken();
      checker.fail(Code::kCorruption, "reading '" + ce.path + "': " + archive_error(a));
    }
    if (offset < 0) checker.fail(Code::kCorruption, "entry '" + ce.path + "' has a negative offset");
    uint64_t block_end = static_cast<uint64_t>(offset) + size;
    if (block_end > ce.size && block_end > end) {
      // More data than the header declared: count the excess against the cap.
      checker.add_bytes(block_end - std::max<uint64_t>(end, ce.size), ce.path);
    }
    end = std::max(end, block_end);
    if (size) pwrite_all(fd.get(), buf, size, offset, name + ": '" + ce.path + "'");
  }
  // Trailing hole of a sparse entry (size already counted against the cap).
  if (end < ce.size && ::ftruncate(fd.get(), static_cast<off_t>(ce.size)) != 0) {
    throw_error(Code::kIOError, name + ": '" + ce.path + "': ftruncate: " + errno_text(errno));
  }
  fd.close(name + ": '" + ce.path + "'");
}

// libarchive reports a clean end both at the end-of-archive marker (zero
// blocks) and when the data simply stops at an entry boundary. The latter is a
// truncated download (no Content-Length, connection closed early), so require
// the marker: both 512-byte zero blocks consumed at the end (every tar writer
// emits two; a stream cut inside them is cut, even if no entry lost data).
void check_end_marker(struct archive* a, la_int64_t before, const EntryChecker& checker) {
  const la_int64_t after = archive_filter_bytes(a, 0);
  if (after - before < 1024) {
    checker.fail(Code::kCorruption, "truncated archive: data ends after " + std::to_string(checker.entries()) +
                                        " entries without the end-of-archive marker");
  }
}

// The next entry's header, or null at the end of the archive (whose end
// marker is then checked). A malformed header is Corruption.
struct archive_entry* next_entry(struct archive* a, TarStream& stream, const EntryChecker& checker,
                                 const std::string& name) {
  struct archive_entry* e = nullptr;
  const la_int64_t before = archive_filter_bytes(a, 0);
  int r = archive_read_next_header(a, &e);
  if (r == ARCHIVE_EOF) {
    stream.fail_if_broken();
    check_end_marker(a, before, checker);
    stream.finish();  // the rest of the stream: padding, trailer, nothing after it
    return nullptr;
  }
  if (r != ARCHIVE_OK && r != ARCHIVE_WARN) {  // ARCHIVE_RETRY too: a header that is not one
    stream.fail_if_broken();
    throw_error(Code::kCorruption, name + ": malformed archive after " + std::to_string(checker.entries()) +
                                       " entries: " + archive_error(a));
  }
  return e;
}

bool module_pb_listed(const EntryChecker& checker) {
  if (checker.files().count("module.pb")) return true;
  std::set<std::string> tops;
  for (const std::string& n : checker.names()) tops.insert(split_path(n)[0]);
  for (const std::string& n : checker.dirs()) tops.insert(split_path(n)[0]);
  if (tops.size() != 1) return false;
  return checker.files().count(*tops.begin() + "/module.pb") > 0;
}

}  // namespace

void check_module_pb_present(const fs::path& dir) {
  struct stat st;
  fs::path pb = dir / "module.pb";
  if (::lstat(pb.c_str(), &st) != 0) {
    throw_error(Code::kCorruption, "not a module: no module.pb in " + dir.string());
  }
  if (!S_ISREG(st.st_mode)) {
    throw_error(Code::kCorruption, "not a module: " + pb.string() + " is not a regular file");
  }
  if (st.st_size == 0) {
    throw_error(Code::kCorruption, "not a module: " + pb.string() + " is empty");
  }
}

UnpackResult unpack_archive(const fs::path& archive, const fs::path& dest, const UnpackOptions& options) {
  const std::string name = options.display_name.empty() ? archive.string() : options.display_name;
  if (::mkdir(dest.c_str(), 0755) != 0) {
    throw_error(errno == EEXIST ? Code::kAlreadyExists : Code::kIOError,
                name + ": cannot create unpack directory " + dest.string() + ": " + errno_text(errno));
  }
  RemoveOnFailure guard(dest);
  TarStream stream(archive, name, max_stream_bytes(options.limits));
  ArchivePtr a = stream.open();
  EntryChecker checker(name, options.limits);
  std::set<std::string> made;  // directories known to exist
  while (struct archive_entry* e = next_entry(a.get(), stream, checker, name)) {
    if (interrupted()) throw_error(Code::kUnavailable, name + ": interrupted");
    CheckedEntry ce = checker.check(e);
    if (ce.kind == Kind::kSkip) continue;
    make_parents(dest, ce.path, made, name);
    fs::path full = dest / ce.path;
    switch (ce.kind) {
      case Kind::kDir:
        if (!made.count(ce.path)) {
          make_dir(full, name, ce.path);
          made.insert(ce.path);
        }
        break;
      case Kind::kFile:
        extract_file(a.get(), stream, dest, ce, checker, name);
        break;
      case Kind::kSymlink:
        if (::symlink(ce.target.c_str(), full.c_str()) != 0) {
          throw_error(Code::kIOError, name + ": cannot create symlink '" + ce.path + "': " + errno_text(errno));
        }
        break;
      case Kind::kHardlink:
        if (::link((dest / ce.target).c_str(), full.c_str()) != 0) {
          throw_error(Code::kIOError, name + ": cannot create hard link '" + ce.path + "': " + errno_text(errno));
        }
        break;
      case Kind::kSkip:
        break;
    }
  }
  UnpackResult result;
  result.entries = checker.entries();
  result.total_bytes = checker.total();
  try {
    hoist_single_top_dir(dest);
  } catch (const fs::filesystem_error& e) {
    throw_error(Code::kIOError, name + ": " + e.what());
  }
  check_symlinks_resolve_inside(dest, checker, name);
  result.module_dir = dest;
  if (options.validate) {
    try {
      if (options.validator) {
        options.validator(dest);
      } else {
        check_module_pb_present(dest);
      }
    } catch (const Error& e) {
      // Name files as archive entries, not by the folder they were unpacked to.
      std::string message = e.message();
      for (const std::string& prefix : {dest.string() + "/", dest.string()}) {
        for (size_t p; (p = message.find(prefix)) != std::string::npos;)
          message.replace(p, prefix.size(), prefix.back() == '/' ? "" : "the archive's root");
      }
      throw Error(e.code(), name + ": " + message);
    }
  }
  guard.release();
  return result;
}

UnpackResult inspect_archive(const fs::path& archive, const UnpackOptions& options) {
  const std::string name = options.display_name.empty() ? archive.string() : options.display_name;
  TarStream stream(archive, name, max_stream_bytes(options.limits));
  ArchivePtr a = stream.open();
  EntryChecker checker(name, options.limits);
  while (struct archive_entry* e = next_entry(a.get(), stream, checker, name)) {
    CheckedEntry ce = checker.check(e);
    if (ce.kind != Kind::kFile) continue;
    uint64_t end = 0;
    for (;;) {
      const void* buf = nullptr;
      size_t size = 0;
      la_int64_t offset = 0;
      int rr = archive_read_data_block(a.get(), &buf, &size, &offset);
      if (rr == ARCHIVE_EOF) break;
      if (rr < ARCHIVE_WARN) {
        stream.fail_if_broken();
        checker.fail(Code::kCorruption, "reading '" + ce.path + "': " + archive_error(a.get()));
      }
      uint64_t block_end = static_cast<uint64_t>(std::max<la_int64_t>(offset, 0)) + size;
      if (block_end > ce.size && block_end > end) {
        checker.add_bytes(block_end - std::max<uint64_t>(end, ce.size), ce.path);
      }
      end = std::max(end, block_end);
    }
  }
  if (options.validate && !module_pb_listed(checker)) {
    throw_error(Code::kCorruption, name + ": not a module: the archive has no module.pb");
  }
  UnpackResult result;
  result.entries = checker.entries();
  result.total_bytes = checker.total();
  return result;
}

}  // namespace hub::resolver
