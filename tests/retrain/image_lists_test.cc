#include "retrain/image_lists.h"

#include <doctest/doctest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>

#include "hub/core/error.h"
#include "retrain/bottleneck_cache.h"
#include "testutil.h"

namespace fs = std::filesystem;
using namespace hub;
using namespace hub::retrain;
using hub::testing::TempDir;

namespace {
void touch(const fs::path& p, const std::string& content = "x") {
  fs::create_directories(p.parent_path());
  std::ofstream(p) << content;
}
}  // namespace

TEST_CASE("split follows retrain.py's SHA-1 rule (values from Python's hashlib)") {
  // p = (int(sha1(name), 16) mod 2^27) * 100 / (2^27 - 1), computed independently.
  CHECK(percentage_hash("daisy/100080576_f52e8ee070_n.jpg") == doctest::Approx(65.5367535765).epsilon(1e-9));
  CHECK(percentage_hash("cats/cat_001.jpg") == doctest::Approx(5.3755909605).epsilon(1e-9));
  CHECK(percentage_hash("z/image_42.jpeg") == doctest::Approx(17.1394744302).epsilon(1e-9));
  CHECK(assign_category("cats/cat_001.jpg", 10, 10) == Category::kValidation);
  CHECK(assign_category("z/image_42.jpeg", 10, 10) == Category::kTesting);
  CHECK(assign_category("cats/cat_002.jpg", 10, 10) == Category::kTraining);
  CHECK(assign_category("dogs/dog_17.png", 10, 10) == Category::kTraining);
  // _nohash_ groups files: both hash as "speech/bob".
  CHECK(percentage_hash("speech/bob_nohash_0.wav") == doctest::Approx(95.2061921001).epsilon(1e-9));
  CHECK(percentage_hash("speech/bob_nohash_1.wav") == percentage_hash("speech/bob_nohash_0.wav"));
}

TEST_CASE("label names as retrain.py normalizes them") {
  CHECK(label_name("Daisy") == "daisy");
  CHECK(label_name("Sea__Lions--2") == "sea lions 2");
  CHECK(label_name("ankle boot") == "ankle boot");
  CHECK(label_name("T-shirt/top") == "t shirt top");
}

TEST_CASE("create_image_lists scans class folders, splits stably and warns") {
  TempDir t("image_lists");
  for (int i = 0; i < 25; ++i) touch(t.path / "Cats" / ("cat_" + std::to_string(i) + ".jpg"));
  for (int i = 0; i < 5; ++i) touch(t.path / "dogs" / ("dog_" + std::to_string(i) + ".PNG"));
  touch(t.path / "dogs" / "notes.txt");
  fs::create_directories(t.path / "empty");
  ImageLists lists = create_image_lists(t.path, 10, 10);
  REQUIRE(lists.classes.size() == 2);
  CHECK(lists.classes[0].label == "cats");
  CHECK(lists.classes[1].label == "dogs");
  const ClassImages& dogs = lists.classes[1];
  CHECK(dogs.training.size() + dogs.validation.size() + dogs.testing.size() == 5);
  size_t cats = lists.classes[0].training.size() + lists.classes[0].validation.size() + lists.classes[0].testing.size();
  CHECK(cats == 25);
  // Warnings: empty folder and dogs < 20.
  CHECK(lists.warnings.size() == 2);
  // Adding files does not move existing ones.
  auto before = lists.classes[0].validation;
  for (int i = 25; i < 60; ++i) touch(t.path / "Cats" / ("cat_" + std::to_string(i) + ".jpg"));
  ImageLists again = create_image_lists(t.path, 10, 10);
  for (const std::string& f : before)
    CHECK(std::find(again.classes[0].validation.begin(), again.classes[0].validation.end(), f) !=
          again.classes[0].validation.end());
}

TEST_CASE("create_image_lists rejects bad image dirs with the flag name") {
  TempDir t("image_lists");
  auto message = [](const fs::path& p) {
    try {
      create_image_lists(p, 10, 10);
    } catch (const Error& e) {
      return std::string(e.what());
    }
    return std::string();
  };
  CHECK(message(t.path / "missing").find("--image_dir") != std::string::npos);
  CHECK(message(t.path).find("no class folders") != std::string::npos);
  touch(t.path / "only" / "a.jpg");
  CHECK(message(t.path).find("only one class") != std::string::npos);
  CHECK_THROWS_AS(create_image_lists(t.path, 60, 50), Error);
}

TEST_CASE("bottleneck cache round trip and damage detection") {
  TempDir t("image_lists");
  CHECK(module_tag("https://example.com/m/1.tar.gz") == "https~example.com~m~1.tar.gz");
  BottleneckCache cache(t.path, "/models/mobilenet", "digest-1");
  std::vector<float> v = {1.5f, -2.0f, 0.25f};
  cache.store("cats", "a.jpg", v);
  auto got = cache.load("cats", "a.jpg", 3);
  REQUIRE(got.has_value());
  CHECK(*got == v);
  CHECK_FALSE(cache.load("cats", "a.jpg", 4).has_value());  // other dimension
  BottleneckCache other(t.path, "/models/mobilenet", "digest-2");
  CHECK_FALSE(other.load("cats", "a.jpg", 3).has_value());  // module changed
  // Flip one byte of the values: CRC mismatch.
  fs::path p = cache.path("cats", "a.jpg");
  std::fstream f(p, std::ios::in | std::ios::out | std::ios::binary);
  f.seekp(21);
  f.put('\x7f');
  f.close();
  CHECK_FALSE(cache.load("cats", "a.jpg", 3).has_value());
  // Truncated file.
  fs::resize_file(p, 10);
  CHECK_FALSE(cache.load("cats", "a.jpg", 3).has_value());
}
