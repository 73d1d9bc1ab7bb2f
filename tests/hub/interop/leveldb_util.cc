#include "leveldb_util.h"

#include <doctest/doctest.h>
#include <leveldb/env.h>
#include <leveldb/iterator.h>
#include <leveldb/options.h>
#include <leveldb/table.h>
#include <leveldb/table_builder.h>

#include <memory>

namespace hub::testing {

namespace {

// A table opened by LevelDB, closed on destruction.
struct OpenTable {
  explicit OpenTable(const std::string& path) {
    leveldb::Env* env = leveldb::Env::Default();
    uint64_t size = 0;
    leveldb::Status s = env->GetFileSize(path, &size);
    REQUIRE_MESSAGE(s.ok(), s.ToString());
    leveldb::RandomAccessFile* f = nullptr;
    s = env->NewRandomAccessFile(path, &f);
    REQUIRE_MESSAGE(s.ok(), s.ToString());
    file.reset(f);
    leveldb::Options options;
    options.paranoid_checks = true;
    leveldb::Table* t = nullptr;
    s = leveldb::Table::Open(options, file.get(), size, &t);
    REQUIRE_MESSAGE(s.ok(), path, ": ", s.ToString());
    table.reset(t);
  }
  std::unique_ptr<leveldb::Iterator> iterator() const {
    leveldb::ReadOptions ro;
    ro.verify_checksums = true;
    return std::unique_ptr<leveldb::Iterator>(table->NewIterator(ro));
  }
  std::unique_ptr<leveldb::RandomAccessFile> file;
  std::unique_ptr<leveldb::Table> table;
};

}  // namespace

Entries leveldb_entries(const std::string& path) {
  OpenTable t(path);
  auto it = t.iterator();
  Entries out;
  for (it->SeekToFirst(); it->Valid(); it->Next()) out.emplace_back(it->key().ToString(), it->value().ToString());
  REQUIRE_MESSAGE(it->status().ok(), it->status().ToString());
  return out;
}

std::string leveldb_seek(const std::string& path, const std::string& key) {
  OpenTable t(path);
  auto it = t.iterator();
  it->Seek(key);
  REQUIRE_MESSAGE(it->status().ok(), it->status().ToString());
  if (!it->Valid() || it->key().ToString() != key) return "<absent>";
  return it->value().ToString();
}

void leveldb_write(const std::string& path, const Entries& entries, bool snappy, size_t block_size,
                   int restart_interval) {
  leveldb::WritableFile* f = nullptr;
  leveldb::Status s = leveldb::Env::Default()->NewWritableFile(path, &f);
  REQUIRE_MESSAGE(s.ok(), s.ToString());
  std::unique_ptr<leveldb::WritableFile> file(f);
  leveldb::Options options;
  options.compression = snappy ? leveldb::kSnappyCompression : leveldb::kNoCompression;
  options.block_size = block_size;
  options.block_restart_interval = restart_interval;
  leveldb::TableBuilder builder(options, file.get());
  for (const auto& [k, v] : entries) builder.Add(k, v);
  s = builder.Finish();
  REQUIRE_MESSAGE(s.ok(), s.ToString());
  s = file->Close();
  REQUIRE_MESSAGE(s.ok(), s.ToString());
}

}  // namespace hub::testing
