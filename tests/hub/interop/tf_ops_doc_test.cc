// docs/import.md's TensorFlow tables list exactly the ops the mapping handles:
// the TensorFlow ops imported (hub/interop/tf/ops*.cc importers) and the hub
// ops exported (their exporters, plus the sources the exporter writes itself).
#include <doctest/doctest.h>

#include <set>
#include <sstream>

#include "hub/core/fileio.h"
#include "hub/interop/tf/ops.h"
#include "testutil.h"

using namespace hub;

namespace {

// The ops in the first column of the table after `heading` whose header row
// starts with `first_header`.
std::set<std::string> table_ops(const std::string& heading, const std::string& first_header) {
  const std::string doc = read_file_bytes(std::string(HUB_SOURCE_DIR) + "/docs/import.md");
  const size_t start = doc.find(heading);
  REQUIRE_MESSAGE(start != std::string::npos, heading);
  const size_t table = doc.find("| " + first_header + " |", start);
  REQUIRE(table != std::string::npos);
  std::set<std::string> ops;
  std::istringstream lines(doc.substr(table));
  std::string line;
  std::getline(lines, line);  // header
  std::getline(lines, line);  // |---|
  while (std::getline(lines, line) && line.rfind("| ", 0) == 0) {
    std::istringstream cell(line.substr(2, line.find(" |", 2) - 2));
    for (std::string op; std::getline(cell, op, ',');) {
      op.erase(0, op.find_first_not_of(' '));
      ops.insert(op);
    }
  }
  return ops;
}

void check_same(const std::set<std::string>& documented, const std::set<std::string>& mapped) {
  CHECK(documented == mapped);
  for (const std::string& op : mapped)
    if (!documented.count(op)) MESSAGE("not documented: " << op);
  for (const std::string& op : documented)
    if (!mapped.count(op)) MESSAGE("documented but not mapped: " << op);
}

}  // namespace

TEST_CASE("docs/import.md lists exactly the TensorFlow ops imported and the hub ops exported") {
  // (TensorFlow 1 loops' own ops are rewritten into a While before import: tf1_control_flow.cc.)
  std::set<std::string> imported = {"Enter", "LoopCond", "NextIteration", "Exit"},
                        exported = {"Placeholder", "Const", "Variable"};
  for (const auto& [op, importer] : tf::op_importers()) imported.insert(op);
  for (const auto& [op, exporter] : tf::op_exporters()) exported.insert(op);
  check_same(table_ops("### TensorFlow ops", "TensorFlow op"), imported);
  check_same(table_ops("### Export: `hub convert MODULE --to savedmodel", "hub op"), exported);
}
