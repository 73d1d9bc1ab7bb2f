// TensorFlow 1's control flow, written into the graph itself, as the
// functional While and If of TensorFlow 2, so one importer (map_while and
// map_if in ops_control.cc) takes both.
//
// Loops (tf.while_loop in a graph: dynamic_rnn, map_fn, scan): a frame of
// nodes. Each loop variable enters by an Enter, meets its next value in a
// Merge (Enter, NextIteration), is tested through the condition into a
// LoopCond and split by a Switch (Merge, LoopCond) into the body (output 1)
// and an Exit (output 0); loop invariants enter by Enters marked is_constant.
// Which frame a node runs in follows from its inputs: an Enter's output is in
// the frame it names, inside its input's; an Exit's in the frame around its
// input's. Each outermost frame becomes a While node whose inputs are the
// loop variables' initial values then every tensor the frame reads from
// outside (its invariant Enters' inputs, and any other tensor read
// directly), and two functions made from the frame's nodes: the condition
// (the LoopCond's input) and the body (each NextIteration's input; the
// outside tensors returned as they are). Inside both, a loop variable's
// Merge and Switch outputs are the function's argument. The Exits become
// Identities of the While's outputs. A frame nested in it is part of those
// functions' nodes, and becomes a While when they are flattened in their
// turn.
//
// Conds (tf.cond) on a predicate known only at run time: Switches on the
// predicate send each tensor the branches read to output 1 (true) or 0, and
// each result is a Merge of the two sides. The Merges of one predicate become
// Identities of one If's outputs, the branches (found by walking back from
// the Merges to the Switches) its two functions.
#include <algorithm>
#include <deque>
#include <tuple>

#include "hub/interop/tf/graph_import.h"
#include "hub/interop/tf/ops.h"

namespace hub::tf {

namespace {

bool is_control(const std::string& input) { return !input.empty() && input[0] == '^'; }

// The node of an input ("node:k" or "^node"); the name itself when malformed.
std::string node_of(const std::string& input) {
  if (is_control(input)) return input.substr(1);
  const std::optional<std::pair<std::string, int>> t = parse_tensor(input);
  return t ? t->first : input;
}

// The output index of "node:k"; -1 for a control input or a malformed name.
int index_of(const std::string& tensor) {
  const std::optional<std::pair<std::string, int>> t = is_control(tensor) ? std::nullopt : parse_tensor(tensor);
  return t ? t->second : -1;
}

// A function argument: "v<k>" for loop variable k, "e<k>" for outside tensor k.
std::string arg_name(char kind, int64_t k) {
  std::string name(1, kind);
  name += std::to_string(k);
  return name;
}

std::string attr_string(const proto::NodeDef& n, const std::string& key) {
  auto a = n.attr().find(key);
  return a == n.attr().end() ? std::string() : a->second.s();
}

// The frames nodes run in: 0 is the graph's own; each other one is named by
// its Enters and nested in a parent frame.
struct Frames {
  std::vector<int> of;  // per node; -1 when no input leads to it from the graph's frame
  std::vector<int> parent{-1};
  std::vector<std::string> name{""};
  std::map<std::string, int> ids;

  // Whether `frame` is `around` or nested in it.
  bool inside(int frame, int around) const {
    for (int steps = 0; frame >= 0 && steps <= kMaxFrameDepth + 1; ++steps, frame = parent[static_cast<size_t>(frame)])
      if (frame == around) return true;
    return false;
  }
  int depth(int frame) const {
    int d = 0;
    for (; frame > 0 && d <= kMaxFrameDepth; frame = parent[static_cast<size_t>(frame)]) ++d;
    return d;
  }
  // The outermost frame around `frame` (itself when it is one), 0 for 0.
  int outermost(int frame) const {
    while (frame > 0 && parent[static_cast<size_t>(frame)] > 0) frame = parent[static_cast<size_t>(frame)];
    return frame;
  }
  // The frame an Enter from frame `from` names. Its parent is the innermost
  // frame its Enters come from (TensorFlow.js runs graphs whose inner loop
  // enters an outside tensor directly, not through the outer loop's Enter);
  // `moved` is set when that changes.
  int enter(int from, const std::string& frame_name, bool& moved) {
    auto [it, added] = ids.emplace(frame_name, static_cast<int>(parent.size()));
    if (added) {
      parent.push_back(from);
      name.push_back(frame_name);
    } else if (int& p = parent[static_cast<size_t>(it->second)];
               from != p && inside(from, p) && !inside(from, it->second) && depth(from) < kMaxFrameDepth) {
      p = from;
      moved = true;
    }
    return it->second;
  }

  static constexpr int kMaxFrameDepth = 64;
};

// Frames by propagation from the nodes without inputs, repeated until the
// frames' nesting settles. A node runs in the innermost frame its inputs
// lead it to: it takes the first one reached and moves into a frame nested in
// it when another input leads there (a body node reading an outside tensor
// directly, not through an Enter).
Frames assign_frames(const FlatGraph& g, const std::vector<std::vector<int>>& consumers) {
  Frames f;
  for (int pass = 0; pass <= Frames::kMaxFrameDepth; ++pass) {
    bool moved = false;
    f.of.assign(g.nodes.size(), -1);
    std::deque<int> ready;
    for (size_t i = 0; i < g.nodes.size(); ++i)
      if (g.nodes[i].input_size() == 0) {
        f.of[i] = 0;
        ready.push_back(static_cast<int>(i));
      }
    while (!ready.empty()) {
      const int p = ready.front();
      ready.pop_front();
      const int from = f.of[static_cast<size_t>(p)];
      for (int c : consumers[static_cast<size_t>(p)]) {
        const proto::NodeDef& n = g.nodes[static_cast<size_t>(c)];
        int frame = from;
        if (n.op() == "Enter") frame = f.enter(from, attr_string(n, "frame_name"), moved);
        if (n.op() == "Exit") frame = from > 0 ? f.parent[static_cast<size_t>(from)] : 0;
        int& own = f.of[static_cast<size_t>(c)];
        if (own >= 0 && (frame == own || !f.inside(frame, own))) continue;
        own = frame;
        ready.push_back(c);
      }
    }
    if (!moved) break;
  }
  return f;
}

// TensorArrayV3 of unknown element shape: the shape a TensorArrayGatherV3 of
// it states (TensorFlow 1's stack() gives the shape its writes had), so the
// array can be kept as one tensor of known rank.
void take_tensor_array_shapes(FlatGraph& g) {
  for (const proto::NodeDef& gather : g.nodes) {
    if (gather.op() != "TensorArrayGatherV3" || gather.input_size() < 1) continue;
    auto shape = gather.attr().find("element_shape");
    if (shape == gather.attr().end() || shape->second.shape().unknown_rank()) continue;
    std::string src = node_of(gather.input(0));
    for (int hops = 0; hops < 64; ++hops) {
      auto it = g.by_name.find(src);
      if (it == g.by_name.end()) break;
      proto::NodeDef& n = g.nodes[static_cast<size_t>(it->second)];
      if ((n.op() == "Enter" || n.op() == "Identity") && n.input_size() > 0 && !is_control(n.input(0))) {
        src = node_of(n.input(0));
        continue;
      }
      if (n.op() != "TensorArrayV3") break;
      auto own = n.mutable_attr()->find("element_shape");
      if (own == n.mutable_attr()->end() || own->second.shape().unknown_rank())
        *(*n.mutable_attr())["element_shape"].mutable_shape() = shape->second.shape();
      break;
    }
  }
}

// The nodes of a function body `nodes` that its tensor `ref` ("node:arg:k",
// or an argument) needs, through data and control inputs, in their order.
std::vector<proto::NodeDef> needed(const std::vector<proto::NodeDef>& nodes, const std::string& ref) {
  std::map<std::string, const proto::NodeDef*> by_name;
  for (const proto::NodeDef& n : nodes) by_name[n.name()] = &n;
  std::set<std::string> keep;
  std::vector<std::string> stack{ref};
  while (!stack.empty()) {
    const std::string r = stack.back();
    stack.pop_back();
    const std::string name = is_control(r) ? r.substr(1) : r.substr(0, r.find(':'));
    auto it = by_name.find(name);
    if (it == by_name.end() || !keep.insert(name).second) continue;  // an argument, or seen
    for (const std::string& in : it->second->input()) stack.push_back(in);
  }
  std::vector<proto::NodeDef> out;
  for (const proto::NodeDef& n : nodes)
    if (keep.count(n.name())) out.push_back(n);
  return out;
}

// What loops and conds share: functions made from a region of the graph's
// nodes (copied with their inputs named as function bodies name them), which
// read the tensors from outside the region as arguments "e<j>".
class RegionRewrite {
 protected:
  explicit RegionRewrite(FlatGraph& g) : g_(g) {}

  const proto::NodeDef& node(int i) const { return g_.nodes[static_cast<size_t>(i)]; }
  int index(const std::string& name) const {
    auto it = g_.by_name.find(name);
    return it == g_.by_name.end() ? -1 : it->second;
  }

  // A tensor the region reads from outside: argument "e<j>".
  std::string external(const std::string& tensor) {
    auto [it, added] = external_index_.emplace(tensor, static_cast<int64_t>(externals_.size()));
    if (added) {
      externals_.push_back(tensor);
      external_types_.push_back(stated_type(tensor));
    }
    return arg_name('e', it->second);
  }

  // Output k of region node `src`, as a function body names it.
  std::string member_ref(const std::string& src, int k) const {
    const std::optional<std::vector<std::string>> args = op_output_args(node(index(src)).op(), g_.functions);
    return src + ":" + (args && !args->empty() ? args->front() : "output") + ":" + std::to_string(k);
  }

  // A function of `args` (name, TensorFlow dtype) then the outside tensors,
  // made of `nodes`, returning `outputs` (name, dtype, what it returns);
  // added to the graph's functions.
  std::string function(const std::string& name, const std::vector<std::pair<std::string, int>>& args,
                       const std::vector<proto::NodeDef>& nodes,
                       const std::vector<std::tuple<std::string, int, std::string>>& outputs) {
    auto f = std::make_shared<proto::FunctionDef>();
    f->mutable_signature()->set_name(name);
    auto add_arg = [&](const std::string& arg, int dtype) {
      auto* a = f->mutable_signature()->add_input_arg();
      a->set_name(arg);
      a->set_type(static_cast<proto::DataType>(dtype));
    };
    for (const auto& [arg, dtype] : args) add_arg(arg, dtype);
    for (size_t j = 0; j < externals_.size(); ++j) add_arg(arg_name('e', static_cast<int64_t>(j)), external_types_[j]);
    for (const proto::NodeDef& n : nodes) *f->add_node_def() = n;
    for (const auto& [out, dtype, ret] : outputs) {
      auto* o = f->mutable_signature()->add_output_arg();
      o->set_name(out);
      o->set_type(static_cast<proto::DataType>(dtype));
      (*f->mutable_ret())[out] = ret;
    }
    if (g_.functions.count(name)) fail("a function is already named '" + name + "'");
    g_.functions[name] = f.get();
    g_.made_functions.push_back(std::move(f));
    return name;
  }

  // A name for a new node from `base`, used by no node but possibly those of
  // `region` the rewrite removes (not its Consts, which stay).
  std::string new_name(std::string base, const std::set<int>& region) const {
    while (index(base) >= 0 && (!region.count(index(base)) || node(index(base)).op() == "Const")) base += "_";
    return base;
  }

  [[noreturn]] virtual void fail(const std::string& message) const = 0;

  FlatGraph& g_;
  std::vector<std::string> externals_;
  std::vector<int> external_types_;  // DT_INVALID where the making node states none

 private:
  // The dtype attribute of the node making `tensor` (0, DT_INVALID, if none).
  int stated_type(const std::string& tensor) const {
    const int i = index(node_of(tensor));
    if (i < 0) return 0;
    for (const char* key : {"T", "dtype"})
      if (auto a = node(i).attr().find(key); a != node(i).attr().end() && a->second.has_type()) return a->second.type();
    return 0;
  }

  std::map<std::string, int64_t> external_index_;
};

// One outermost frame, rewritten into `out` (the While node, the Exits as
// Identities, the two functions).
class FrameRewrite : RegionRewrite {
 public:
  FrameRewrite(FlatGraph& g, const std::set<int>& members, const std::vector<int>& exits, int frame,
               const Frames& frames)
      : RegionRewrite(g), members_(members), exits_(exits), frame_(frame), frames_(frames) {}

  // The nodes replacing the frame's.
  std::vector<proto::NodeDef> run() {
    find_structure();
    std::vector<proto::NodeDef> body;
    for (int i : members_) {
      const proto::NodeDef& n = node(i);
      if (structural_.count(n.name()) || hoisted(i)) continue;
      proto::NodeDef copy = n;
      copy.clear_input();
      for (const std::string& in : n.input()) {
        if (is_control(in)) {
          const std::string src = in.substr(1);
          if (!structural_.count(src) && member(src)) copy.add_input(in);
          continue;
        }
        copy.add_input(ref(in, n));
      }
      body.push_back(std::move(copy));
    }
    const std::string cond_ref = ref(node(loop_cond_).input(0), node(loop_cond_));
    std::vector<std::string> next;
    for (const Var& v : vars_) next.push_back(ref(node(v.next).input(0), node(v.next)));
    return replacement(needed(body, cond_ref), body, cond_ref, next);
  }

  [[noreturn]] void fail(const std::string& message) const override {
    throw_error(Code::kInvalidArgument,
                g_.file + ": the TensorFlow 1 while loop '" + frames_.name[frame_] + "': " + message);
  }

 private:
  struct Var {
    int enter, merge, swtch, next;
  };
  // A node of the frame the functions take. Consts (in the frame by a control
  // input from the pivot) stay outside, where TF.js keeps their values: the
  // functions read them as outside tensors.
  bool member(const std::string& name) const {
    const int i = index(name);
    return i >= 0 && members_.count(i) && !hoisted(i);
  }
  bool hoisted(int i) const { return node(i).op() == "Const"; }
  bool in_frame(int i) const { return frames_.of[static_cast<size_t>(i)] == frame_; }

  void find_structure() {
    std::vector<int> conds;
    for (int i : members_)
      if (node(i).op() == "LoopCond" && in_frame(i)) conds.push_back(i);
    if (conds.size() != 1) fail("it has " + std::to_string(conds.size()) + " LoopCond nodes, not one");
    loop_cond_ = conds[0];
    if (node(loop_cond_).input_size() < 1 || is_control(node(loop_cond_).input(0))) fail("its LoopCond has no input");
    structural_.insert(node(loop_cond_).name());
    const std::string pred = node(loop_cond_).name() + ":0";
    for (int i : members_) {
      const proto::NodeDef& s = node(i);
      if (s.op() != "Switch" || !in_frame(i) || s.input_size() < 2 || s.input(1) != pred) continue;
      Var v{-1, index(node_of(s.input(0))), i, -1};
      if (v.merge < 0 || node(v.merge).op() != "Merge" || index_of(s.input(0)) != 0)
        fail("its Switch '" + s.name() + "' does not read a Merge");
      for (const std::string& in : node(v.merge).input()) {
        if (is_control(in)) continue;
        const int src = index(node_of(in));
        if (src >= 0 && node(src).op() == "Enter" && v.enter < 0)
          v.enter = src;
        else if (src >= 0 && node(src).op() == "NextIteration" && v.next < 0)
          v.next = src;
        else
          fail("its Merge '" + node(v.merge).name() + "' does not read one Enter and one NextIteration");
      }
      if (v.enter < 0 || v.next < 0 || node(v.enter).input_size() < 1 || node(v.next).input_size() < 1)
        fail("its Merge '" + node(v.merge).name() + "' does not read one Enter and one NextIteration");
      for (int k : {v.enter, v.merge, v.swtch, v.next}) structural_.insert(node(k).name());
      var_of_[node(v.merge).name()] = static_cast<int>(vars_.size());
      var_of_[node(v.swtch).name()] = static_cast<int>(vars_.size());
      vars_.push_back(v);
    }
    if (vars_.empty()) fail("no Switch reads its LoopCond");
    // Other Enters of this frame bring loop invariants.
    for (int i : members_)
      if (node(i).op() == "Enter" && in_frame(i) && !structural_.count(node(i).name())) {
        if (node(i).input_size() < 1 || is_control(node(i).input(0)))
          fail("its Enter '" + node(i).name() + "' has no input");
        invariant_enters_.insert(node(i).name());
        structural_.insert(node(i).name());
      }
  }

  // Input `in` of frame node `reader`, as a function body names it.
  std::string ref(const std::string& in, const proto::NodeDef& reader) {
    const std::string src = node_of(in);
    const int k = index_of(in);
    if (auto v = var_of_.find(src); v != var_of_.end()) {
      const bool merge = node(vars_[static_cast<size_t>(v->second)].merge).name() == src;
      if ((merge && k == 0) || (!merge && k == 1)) return arg_name('v', v->second);
    }
    if (invariant_enters_.count(src)) return external(node(index(src)).input(0));
    if (structural_.count(src))
      fail("node '" + reader.name() + "' reads '" + in + "', which only the loop's own nodes may read");
    if (!member(src)) return external(in);
    return member_ref(src, k);
  }

  std::vector<proto::NodeDef> replacement(const std::vector<proto::NodeDef>& cond,
                                          const std::vector<proto::NodeDef>& body, const std::string& cond_ref,
                                          const std::vector<std::string>& next) {
    // Named after the LoopCond's scope ("rnn/while/LoopCond" -> "rnn/while").
    const std::string& lc = node(loop_cond_).name();
    const std::string name = new_name(
        lc.size() > 9 && lc.compare(lc.size() - 9, 9, "/LoopCond") == 0 ? lc.substr(0, lc.size() - 9) : lc + "/while",
        members_);
    proto::NodeDef w;
    w.set_name(name);
    w.set_op("While");
    auto& attrs = *w.mutable_attr();
    std::vector<std::pair<std::string, int>> args;
    std::vector<std::tuple<std::string, int, std::string>> outs;
    for (size_t k = 0; k < vars_.size(); ++k) {
      const proto::NodeDef& e = node(vars_[k].enter);
      auto t = e.attr().find("T");
      if (t == e.attr().end()) fail("its Enter '" + e.name() + "' has no T");
      w.add_input(e.input(0));
      args.emplace_back(arg_name('v', static_cast<int64_t>(k)), t->second.type());
      outs.emplace_back(args.back().first + "_next", t->second.type(), next[k]);
    }
    for (size_t j = 0; j < externals_.size(); ++j) {
      const std::string arg = arg_name('e', static_cast<int64_t>(j));
      w.add_input(externals_[j]);
      outs.emplace_back(arg + "_next", external_types_[j], arg);
    }
    auto* types = attrs["T"].mutable_list();
    for (const auto& [out, dtype, ret] : outs) types->add_type(static_cast<proto::DataType>(dtype));
    attrs["parallel_iterations"].set_i(10);
    if (auto p = node(vars_[0].enter).attr().find("parallel_iterations"); p != node(vars_[0].enter).attr().end())
      attrs["parallel_iterations"] = p->second;
    attrs["output_shapes"].mutable_list();
    attrs["cond"].mutable_func()->set_name(
        function("__hub_tf1_cond/" + name, args, cond, {{"go", proto::DT_BOOL, cond_ref}}));
    attrs["body"].mutable_func()->set_name(function("__hub_tf1_body/" + name, args, body, outs));

    std::vector<proto::NodeDef> out{w};
    for (int e : exits_) {
      const proto::NodeDef& x = node(e);
      const std::string src = x.input_size() > 0 ? node_of(x.input(0)) : "";
      auto v = var_of_.find(src);
      if (v == var_of_.end() || node(vars_[static_cast<size_t>(v->second)].swtch).name() != src ||
          index_of(x.input(0)) != 0)
        fail("its Exit '" + x.name() + "' does not read a loop Switch's output 0");
      proto::NodeDef id;
      id.set_name(x.name());
      id.set_op("Identity");
      id.add_input(name + ":" + std::to_string(v->second));
      if (auto t = x.attr().find("T"); t != x.attr().end()) (*id.mutable_attr())["T"] = t->second;
      out.push_back(std::move(id));
    }
    return out;
  }

  const std::set<int>& members_;
  const std::vector<int>& exits_;
  int frame_;
  const Frames& frames_;
  int loop_cond_ = -1;
  std::vector<Var> vars_;
  std::map<std::string, int> var_of_;  // a Merge or Switch -> its loop variable
  std::set<std::string> structural_;   // the loop's own nodes: not copied into the functions
  std::set<std::string> invariant_enters_;
};

// ---- Conds --------------------------------------------------------------------

// What a walk back from one input of a Merge finds: the nodes of the branch
// it ends (members), the Switches it enters by (entries: output 1 of a
// Switch on the cond's predicate is the true branch, output 0 the false
// one), and the side a control input from a branch marker (cond/switch_t, an
// Identity of a Switch) tells, for a branch that is only a Const.
struct BranchWalk {
  std::vector<int> members;
  std::set<int> entries;          // Switch nodes
  std::set<int> sides;            // 0 false, 1 true
  std::set<std::string> preds;    // the Switches' predicate tensors
  std::set<std::string> markers;  // branch markers' Switch(pred, pred) nodes
  std::set<int> merges;           // inner conds' Merges among the members
};

// Ops whose outputs a walk never enters: values from outside the cond.
bool is_source(const std::string& op) {
  return op == "Const" || op == "Placeholder" || op == "PlaceholderWithDefault" || op == "VariableV2" ||
         op == "VarHandleOp";
}

constexpr int kMaxCondDepth = 64;

// Walks back from `tensor`, a data input of a Merge: a Switch met at depth 0
// is the cond's entry; a Merge on the way opens an inner cond (depth + 1)
// that its Switches close. Nothing once `budget` node visits are spent (a
// Merge whose inputs lead far without a Switch is not read as a cond).
std::optional<BranchWalk> walk_branch(const FlatGraph& g, const std::string& tensor, int64_t& budget) {
  BranchWalk w;
  std::set<std::pair<int, int>> seen;
  std::vector<std::pair<std::string, int>> stack{{tensor, 0}};
  auto marker = [&](const std::string& control) {  // ^cond/switch_t: Identity(Switch(p, p):1)
    const int id = g.by_name.count(control) ? g.by_name.at(control) : -1;
    if (id < 0 || g.nodes[static_cast<size_t>(id)].op() != "Identity" ||
        g.nodes[static_cast<size_t>(id)].input_size() < 1)
      return;
    const std::string& in = g.nodes[static_cast<size_t>(id)].input(0);
    auto sw = g.by_name.find(node_of(in));
    if (sw == g.by_name.end() || g.nodes[static_cast<size_t>(sw->second)].op() != "Switch" || index_of(in) < 0) return;
    w.sides.insert(index_of(in));
    w.markers.insert(node_of(in));
  };
  while (!stack.empty()) {
    const auto [t, depth] = stack.back();
    stack.pop_back();
    auto it = g.by_name.find(node_of(t));
    if (it == g.by_name.end() || !seen.insert({it->second, depth}).second) continue;
    if (--budget < 0) return std::nullopt;
    const int i = it->second;
    const proto::NodeDef& n = g.nodes[static_cast<size_t>(i)];
    if (is_source(n.op())) {
      if (depth == 0)
        for (const std::string& in : n.input())
          if (is_control(in)) marker(in.substr(1));
      continue;
    }
    int inner = depth;
    if (n.op() == "Switch" && n.input_size() >= 2) {
      if (depth == 0) {
        w.entries.insert(i);
        w.sides.insert(index_of(t));
        w.preds.insert(n.input(1));
        continue;
      }
      inner = depth - 1;
    }
    if (n.op() == "Merge") {
      if (depth == 0) w.merges.insert(i);
      inner = depth + 1;
      if (inner > kMaxCondDepth)
        throw_error(Code::kInvalidArgument, g.file + ": node '" + n.name() + "': TensorFlow 1 conds nest deeper than " +
                                                std::to_string(kMaxCondDepth));
    }
    w.members.push_back(i);
    for (const std::string& in : n.input()) {
      if (!is_control(in))
        stack.emplace_back(in, inner);
      else if (depth == 0)
        marker(in.substr(1));
    }
  }
  return w;
}

// Which tensors are known only at run time: computed from a fed tensor or a
// variable (a Shape, Size or Rank of one may be known at import: conds on
// those are left to the Switch importer, which takes a known predicate's
// branch). Each node is classified once for all the graph's conds.
class RunTimeValues {
 public:
  RunTimeValues(const FlatGraph& g, const std::set<std::string>& fed)
      : g_(g), fed_(fed), state_(g.nodes.size(), kUnknown) {}

  bool operator()(const std::string& tensor) {
    if (fed_.count(tensor)) return true;
    auto it = g_.by_name.find(node_of(tensor));
    return it != g_.by_name.end() && computed(it->second);
  }

 private:
  enum State : signed char { kUnknown, kVisiting, kNo, kYes };

  // Depth first over data inputs; a node on the stack again (a cycle) counts as no.
  bool computed(int root) {
    std::vector<std::pair<int, int>> stack;  // node, next input
    auto enter = [&](int i) {
      const std::string& op = g_.nodes[static_cast<size_t>(i)].op();
      if (op == "VariableV2" || op == "VarHandleOp" || op == "Placeholder") {
        state_[static_cast<size_t>(i)] = kYes;
      } else if (op == "Shape" || op == "Size" || op == "Rank") {
        state_[static_cast<size_t>(i)] = kNo;
      } else {
        state_[static_cast<size_t>(i)] = kVisiting;
        stack.emplace_back(i, 0);
      }
    };
    if (state_[static_cast<size_t>(root)] == kUnknown) enter(root);
    while (!stack.empty()) {
      auto& [i, next] = stack.back();
      const proto::NodeDef& n = g_.nodes[static_cast<size_t>(i)];
      if (next == n.input_size()) {
        state_[static_cast<size_t>(i)] = kNo;
        stack.pop_back();
        continue;
      }
      const std::string& in = n.input(next++);
      if (is_control(in)) continue;
      auto src = g_.by_name.find(node_of(in));
      State found = fed_.count(in) ? kYes : kNo;
      if (found == kNo && src != g_.by_name.end()) {
        const size_t k = static_cast<size_t>(src->second);
        if (state_[k] == kUnknown) enter(src->second);
        if (state_[k] == kVisiting) continue;  // entered now (its inputs next), or a cycle
        found = state_[k];
      }
      if (found == kYes)  // everything on the stack reads it
        for (; !stack.empty(); stack.pop_back()) state_[static_cast<size_t>(stack.back().first)] = kYes;
    }
    return state_[static_cast<size_t>(root)] == kYes;
  }

  const FlatGraph& g_;
  const std::set<std::string>& fed_;
  std::vector<State> state_;
};

// One TensorFlow 1 cond on a run-time predicate: its Merges become
// Identities of one If's outputs, its branches that If's functions.
class CondRewrite : RegionRewrite {
 public:
  struct MergeBranches {
    int merge;
    BranchWalk branch[2];  // by side: false, true
    std::string input[2];  // the Merge's input from each side
  };

  CondRewrite(FlatGraph& g, std::string pred, std::vector<MergeBranches> merges)
      : RegionRewrite(g), pred_(std::move(pred)), merges_(std::move(merges)) {}

  // The If node; the Merges are replaced in place.
  proto::NodeDef run() {
    for (const MergeBranches& m : merges_)
      for (int side = 0; side < 2; ++side) {
        entries_.insert(m.branch[side].entries.begin(), m.branch[side].entries.end());
        for (int i : m.branch[side].members) members_[side].insert(i);
      }
    std::vector<proto::NodeDef> nodes[2];
    std::vector<std::tuple<std::string, int, std::string>> outs[2];
    for (int side = 0; side < 2; ++side) {
      for (int i : members_[side]) {
        proto::NodeDef copy = node(i);
        copy.clear_input();
        for (const std::string& in : node(i).input()) {
          if (!is_control(in))
            copy.add_input(ref(in, side));
          else if (index(in.substr(1)) >= 0 && members_[side].count(index(in.substr(1))))
            copy.add_input(in);
        }
        nodes[side].push_back(std::move(copy));
      }
      for (size_t k = 0; k < merges_.size(); ++k)
        outs[side].emplace_back("out" + std::to_string(k), merge_type(k), ref(merges_[k].input[side], side));
    }
    const std::string& first = node(merges_[0].merge).name();
    const size_t slash = first.rfind('/');
    const std::string name = new_name((slash == std::string::npos ? first : first.substr(0, slash)) + "/If", {});
    proto::NodeDef n;
    n.set_name(name);
    n.set_op("If");
    n.add_input(pred_);
    for (const std::string& e : externals_) n.add_input(e);
    auto& attrs = *n.mutable_attr();
    attrs["Tcond"].set_type(proto::DT_BOOL);
    for (int t : external_types_) attrs["Tin"].mutable_list()->add_type(static_cast<proto::DataType>(t));
    for (size_t k = 0; k < merges_.size(); ++k)
      attrs["Tout"].mutable_list()->add_type(static_cast<proto::DataType>(merge_type(k)));
    attrs["output_shapes"].mutable_list();
    // (Both functions take every outside tensor: made after both branches are read.)
    attrs["then_branch"].mutable_func()->set_name(function("__hub_tf1_then/" + name, {}, nodes[1], outs[1]));
    attrs["else_branch"].mutable_func()->set_name(function("__hub_tf1_else/" + name, {}, nodes[0], outs[0]));
    // The branches' Consts hang on their markers, which are never imported now.
    for (int i : hoisted_) g_.nodes[static_cast<size_t>(i)].clear_input();
    for (size_t k = 0; k < merges_.size(); ++k) {
      proto::NodeDef& m = g_.nodes[static_cast<size_t>(merges_[k].merge)];
      const int dtype = merge_type(k);
      m.set_op("Identity");
      m.clear_input();
      m.add_input(name + ":" + std::to_string(k));
      m.clear_attr();
      (*m.mutable_attr())["T"].set_type(static_cast<proto::DataType>(dtype));
    }
    return n;
  }

  [[noreturn]] void fail(const std::string& message) const override {
    throw_error(Code::kInvalidArgument,
                g_.file + ": the TensorFlow 1 cond of '" + node(merges_[0].merge).name() + "': " + message);
  }

 private:
  int merge_type(size_t k) const {
    auto t = node(merges_[k].merge).attr().find("T");
    return t == node(merges_[k].merge).attr().end() ? 0 : t->second.type();
  }

  // Data input `in` of a node of branch `side`, as its function names it.
  std::string ref(const std::string& in, int side) {
    const int src = index(node_of(in));
    if (src >= 0 && entries_.count(src)) {
      HUB_CHECK(index_of(in) == side, "a branch reads its Switch's other side");  // (the walks' sides are one each)
      return external(node(src).input(0));
    }
    if (src >= 0 && members_[side].count(src)) return member_ref(node(src).name(), index_of(in));
    if (src >= 0 && node(src).op() == "Const") hoisted_.insert(src);
    return external(in);
  }

  std::string pred_;
  std::vector<MergeBranches> merges_;
  std::set<int> entries_;
  std::set<int> members_[2];
  std::set<int> hoisted_;  // Consts the branches read, as outside tensors
};

}  // namespace

void rewrite_tf1_while_loops(FlatGraph& g) {
  if (std::none_of(g.nodes.begin(), g.nodes.end(),
                   [](const proto::NodeDef& n) { return n.op() == "Enter" || n.op() == "TensorArrayV3"; }))
    return;
  take_tensor_array_shapes(g);
  std::vector<std::vector<int>> consumers(g.nodes.size());
  for (size_t i = 0; i < g.nodes.size(); ++i)
    for (const std::string& in : g.nodes[i].input())
      if (auto it = g.by_name.find(node_of(in)); it != g.by_name.end())
        consumers[static_cast<size_t>(it->second)].push_back(static_cast<int>(i));
  const Frames frames = assign_frames(g, consumers);
  // Each outermost frame's nodes, and the Exits leaving it.
  std::map<int, std::set<int>> members;
  std::map<int, std::vector<int>> exits;
  for (size_t i = 0; i < g.nodes.size(); ++i) {
    const int f = frames.of[i];
    if (f > 0) members[frames.outermost(f)].insert(static_cast<int>(i));
    if (f == 0 && g.nodes[i].op() == "Exit" && g.nodes[i].input_size() > 0) {
      auto src = g.by_name.find(node_of(g.nodes[i].input(0)));
      if (src != g.by_name.end() && frames.of[static_cast<size_t>(src->second)] > 0)
        exits[frames.outermost(frames.of[static_cast<size_t>(src->second)])].push_back(static_cast<int>(i));
    }
  }
  if (members.empty()) return;
  std::set<int> removed;
  std::vector<proto::NodeDef> added;
  for (const auto& [frame, nodes] : members) {
    const std::vector<int>& leaving = exits[frame];
    try {
      std::vector<proto::NodeDef> nodes_out = FrameRewrite(g, nodes, leaving, frame, frames).run();
      for (int i : nodes) {
        if (g.nodes[static_cast<size_t>(i)].op() == "Const")
          g.nodes[static_cast<size_t>(i)].clear_input();  // hoisted: its control input was the pivot's
        else
          removed.insert(i);
      }
      removed.insert(leaving.begin(), leaving.end());
      for (auto& n : nodes_out) added.push_back(std::move(n));
    } catch (const Error& e) {
      // Importing what leaves the loop is the error (the loop's nodes are never reached).
      for (int x : leaving) {
        g.nodes[static_cast<size_t>(x)].clear_input();
        g.broken.emplace(g.nodes[static_cast<size_t>(x)].name(), e);
      }
    }
  }
  std::vector<proto::NodeDef> kept;
  for (size_t i = 0; i < g.nodes.size(); ++i)
    if (!removed.count(static_cast<int>(i))) kept.push_back(std::move(g.nodes[i]));
  for (auto& n : added) kept.push_back(std::move(n));
  g.nodes = std::move(kept);
  g.by_name.clear();
  for (size_t i = 0; i < g.nodes.size(); ++i)
    if (!g.by_name.emplace(g.nodes[i].name(), static_cast<int>(i)).second)
      throw_error(Code::kInvalidArgument, g.file + ": two nodes are named '" + g.nodes[i].name() + "'");
}

std::optional<FlatGraph> rewrite_tf1_conds(const FlatGraph& graph, const std::set<std::string>& fed) {
  if (std::none_of(graph.nodes.begin(), graph.nodes.end(), [](const proto::NodeDef& n) { return n.op() == "Merge"; }))
    return std::nullopt;
  // Each Merge of two inputs from the two sides of Switches on one run-time
  // predicate, by that predicate tensor (each tf.cond has its own pred_id).
  int64_t budget = 20'000'000;
  RunTimeValues run_time(graph, fed);
  std::map<std::string, std::vector<CondRewrite::MergeBranches>> conds;
  std::set<int> inner;
  for (size_t i = 0; i < graph.nodes.size(); ++i) {
    const proto::NodeDef& n = graph.nodes[i];
    if (n.op() != "Merge" || n.input_size() < 2 || is_control(n.input(0)) || is_control(n.input(1)) ||
        (n.input_size() > 2 && !is_control(n.input(2))))
      continue;
    CondRewrite::MergeBranches m{static_cast<int>(i), {}, {}};
    std::optional<BranchWalk> walk0 = walk_branch(graph, n.input(0), budget), walk1;
    if (walk0) walk1 = walk_branch(graph, n.input(1), budget);
    if (!walk1) break;
    BranchWalk walks[2] = {std::move(*walk0), std::move(*walk1)};
    std::set<std::string> preds = walks[0].preds;
    preds.insert(walks[1].preds.begin(), walks[1].preds.end());
    // (Sides are Switch output indices: 0 and 1 of a well-formed graph, anything in a malformed one.)
    if (walks[0].sides != std::set<int>{0} && walks[0].sides != std::set<int>{1}) continue;
    if (walks[1].sides != std::set<int>{0} && walks[1].sides != std::set<int>{1}) continue;
    if (walks[0].sides == walks[1].sides || preds.size() > 1)
      continue;  // not a cond this rewrite reads (a known predicate's goes to the Switch importer)
    std::string pred = preds.empty() ? "" : *preds.begin();
    if (pred.empty()) {  // branches of Consts only: the predicate of their markers' Switch(p, p)
      std::set<std::string> markers = walks[0].markers;
      markers.insert(walks[1].markers.begin(), walks[1].markers.end());
      if (markers.size() != 1) continue;
      const proto::NodeDef* sw = graph.find(*markers.begin());
      if (!sw || sw->input_size() < 2) continue;
      pred = sw->input(1);
    }
    if (!run_time(pred)) continue;
    for (int side = 0; side < 2; ++side) {
      const int s = *walks[side].sides.begin();
      m.input[s] = n.input(side);
      for (int merge : walks[side].merges) inner.insert(merge);
      m.branch[s] = std::move(walks[side]);
    }
    conds[pred].push_back(std::move(m));
  }
  if (conds.empty()) return std::nullopt;
  FlatGraph g = graph;
  for (auto& [pred, merges] : conds) {
    std::vector<CondRewrite::MergeBranches> outer;
    for (auto& m : merges)
      if (!inner.count(m.merge)) outer.push_back(std::move(m));
    // One If per set of Merges whose branches share a node or a Switch (the
    // outputs of one tf.cond); Merges on one predicate that share nothing
    // may feed each other, so they are Ifs of their own.
    std::vector<size_t> group(outer.size());
    for (size_t k = 0; k < group.size(); ++k) group[k] = k;
    auto root = [&](size_t k) {
      while (group[k] != k) k = group[k] = group[group[k]];
      return k;
    };
    std::map<int, size_t> owner;
    for (size_t k = 0; k < outer.size(); ++k)
      for (const BranchWalk& b : outer[k].branch) {
        std::vector<int> nodes(b.members.begin(), b.members.end());
        nodes.insert(nodes.end(), b.entries.begin(), b.entries.end());
        for (int i : nodes)
          if (auto [it, added] = owner.emplace(i, k); !added) group[root(k)] = root(it->second);
      }
    std::map<size_t, std::vector<CondRewrite::MergeBranches>> ifs;
    for (size_t k = 0; k < outer.size(); ++k) ifs[root(k)].push_back(std::move(outer[k]));
    for (auto& [key, one_if] : ifs) {
      const int first = one_if[0].merge;
      try {
        proto::NodeDef n = CondRewrite(g, pred, std::move(one_if)).run();
        g.by_name[n.name()] = static_cast<int>(g.nodes.size());
        g.nodes.push_back(std::move(n));
      } catch (const Error& e) {
        // Importing the Merge is the error (its branches are never reached).
        g.nodes[static_cast<size_t>(first)].clear_input();
        g.broken.emplace(g.nodes[static_cast<size_t>(first)].name(), e);
      }
    }
  }
  return g;
}

}  // namespace hub::tf
