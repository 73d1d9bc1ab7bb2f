#include "registry/names.h"

#include <doctest/doctest.h>

#include "hub/core/error.h"

using namespace hub::registry;

TEST_CASE("registry names are normalized and validated") {
  CHECK(normalize_name("MobileNet_V1.x-2", "module") == "mobilenet_v1.x-2");
  for (const char* bad : {"", "../x", "A B", ".hidden", "-x", "a/b", "x\ny", "ä"}) {
    CAPTURE(bad);
    CHECK_THROWS_AS(normalize_name(bad, "module"), hub::Error);
  }
  CHECK(normalize_name(std::string(64, 'a'), "module").size() == 64);
  CHECK_THROWS_AS(normalize_name(std::string(65, 'a'), "module"), hub::Error);
  try {
    normalize_name("A B", "publisher");
    FAIL("no throw");
  } catch (const hub::Error& e) {
    CHECK(e.code() == hub::Code::kInvalidArgument);
    CHECK(std::string(e.what()).find("'A B'") != std::string::npos);
  }
}

TEST_CASE("canonical names follow PEP 503") {
  // re.sub(r"[-_.]+", "-", name).lower(), computed by hand.
  CHECK(canonical_name("Image_Net") == "image-net");
  CHECK(canonical_name("image.net") == "image-net");
  CHECK(canonical_name("IMAGE-NET") == "image-net");
  CHECK(canonical_name("a-_.b__c..d") == "a-b-c-d");
  CHECK(canonical_name("mobilenet_v1.x-2") == "mobilenet-v1-x-2");
  CHECK(canonical_name("imagenet") == "imagenet");
  CHECK(canonical_name("x-") == "x-");
  CHECK(canonical_name("") == "");
  CHECK(canonical_name("image_net") != canonical_name("imagenet"));
}

TEST_CASE("semantic versions parse and order") {
  CHECK(parse_version("1.2.3").text == "1.2.3");
  CHECK(parse_version("1.2.3+build.5").text == "1.2.3");
  for (const char* bad : {"", "1", "1.2", "1.2.3.4", "01.2.3", "1.2.x", "1.2.3-", "1.2.3-a..b", "v1.2.3", "../1"}) {
    CAPTURE(bad);
    CHECK_THROWS_AS(parse_version(bad), hub::Error);
  }
  // The precedence example of the semver spec, in increasing order.
  std::vector<std::string> order = {
      "1.0.0-alpha", "1.0.0-alpha.1", "1.0.0-alpha.beta", "1.0.0-beta", "1.0.0-beta.2", "1.0.0-beta.11", "1.0.0-rc.1",
      "1.0.0",       "1.2.0",         "1.10.0",           "2.0.0"};
  for (size_t i = 0; i + 1 < order.size(); ++i) {
    CAPTURE(order[i]);
    CHECK(compare_versions(parse_version(order[i]), parse_version(order[i + 1])) < 0);
    CHECK(compare_versions(parse_version(order[i + 1]), parse_version(order[i])) > 0);
    CHECK(compare_versions(parse_version(order[i]), parse_version(order[i])) == 0);
  }
}

TEST_CASE("handles parse") {
  Handle h = parse_handle("Acme/Net@1.2.3");
  CHECK(h.module.publisher == "acme");
  CHECK(h.module.name == "net");
  CHECK(h.version == "1.2.3");
  CHECK(parse_handle("acme/net").latest());
  CHECK(parse_handle("acme/net@latest").latest());
  CHECK_THROWS_AS(parse_handle("acme@1.0.0"), hub::Error);
  CHECK_THROWS_AS(parse_handle("acme/../x@1.0.0"), hub::Error);
  CHECK_THROWS_AS(parse_handle("acme/net@1.0"), hub::Error);
}
