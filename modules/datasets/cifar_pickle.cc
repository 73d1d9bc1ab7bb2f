#include "modules/datasets/cifar_pickle.h"

#include <cstdio>
#include <cstring>
#include <memory>
#include <unordered_map>
#include <vector>

#include "hub/core/error.h"

namespace hub::data {
namespace {

// A value of the accepted subset. Objects live in the interpreter's arena and
// refer to each other by pointer, so a container holding itself (through the
// memo) is harmless.
struct Obj {
  enum class Kind { kNone, kBool, kInt, kBytes, kText, kTuple, kList, kDict, kGlobal, kDtype, kArray };
  Kind kind = Kind::kNone;
  int64_t number = 0;       // kBool, kInt
  std::string text;         // kBytes, kText; kGlobal: "module.name"; kDtype: its name
  std::vector<Obj*> items;  // kTuple, kList; kDict: key, value, key, value, ...
  // kArray (after BUILD).
  std::vector<int64_t> shape;
  const Obj* data = nullptr;  // its kBytes, once built
};

const char* kind_name(Obj::Kind k) {
  switch (k) {
    case Obj::Kind::kNone:
      return "None";
    case Obj::Kind::kBool:
      return "bool";
    case Obj::Kind::kInt:
      return "int";
    case Obj::Kind::kBytes:
      return "bytes";
    case Obj::Kind::kText:
      return "str";
    case Obj::Kind::kTuple:
      return "tuple";
    case Obj::Kind::kList:
      return "list";
    case Obj::Kind::kDict:
      return "dict";
    case Obj::Kind::kGlobal:
      return "global";
    case Obj::Kind::kDtype:
      return "numpy.dtype";
    case Obj::Kind::kArray:
      return "numpy.ndarray";
  }
  return "?";
}

constexpr const char* kReconstruct = "numpy.core.multiarray._reconstruct";
constexpr const char* kReconstruct2 = "numpy._core.multiarray._reconstruct";
constexpr const char* kNdarray = "numpy.ndarray";
constexpr const char* kDtype = "numpy.dtype";
constexpr const char* kEncode = "_codecs.encode";

class Unpickler {
 public:
  Unpickler(std::string_view in, const std::string& where) : in_(in), where_(where) {}

  Obj* run() {
    if (in_.size() > kMaxPickleBytes)
      corrupt("pickle of " + std::to_string(in_.size()) + " bytes exceeds the limit of " +
              std::to_string(kMaxPickleBytes));
    if (in_.size() < 2 || static_cast<uint8_t>(in_[0]) != 0x80)
      unsupported("not a protocol-2 pickle (it does not start with PROTO 2)");
    if (in_[1] != 2) unsupported("pickle protocol " + std::to_string(static_cast<uint8_t>(in_[1])) + " (only 2)");
    pos_ = 2;
    while (true) {
      op_at_ = pos_;
      const uint8_t op = byte();
      switch (op) {
        case '.': {  // STOP
          if (stack_.size() != 1 || !marks_.empty()) corrupt("STOP with " + std::to_string(stack_.size()) + " values");
          return stack_.back();
        }
        case '}':
          push(make(Obj::Kind::kDict));
          break;
        case ']':
          push(make(Obj::Kind::kList));
          break;
        case ')':
          push(make(Obj::Kind::kTuple));
          break;
        case 'N':
          push(make(Obj::Kind::kNone));
          break;
        case 0x88:
          push(boolean(true));
          break;  // NEWTRUE
        case 0x89:
          push(boolean(false));
          break;  // NEWFALSE
        case '(':
          marks_.push_back(stack_.size());
          break;
        case 'K':
          push(integer(byte()));
          break;
        case 'M':
          push(integer(static_cast<int64_t>(le(2))));
          break;
        case 'J':
          push(integer(static_cast<int32_t>(static_cast<uint32_t>(le(4)))));
          break;
        case 0x8a: {  // LONG1: little-endian two's complement of n bytes
          const size_t n = byte();
          if (n > 8) unsupported("LONG1 of " + std::to_string(n) + " bytes (at most 8)");
          uint64_t v = n ? le(n) : 0;
          if (n > 0 && n < 8 && (v >> (8 * n - 1)) != 0) v |= ~uint64_t{0} << (8 * n);
          push(integer(static_cast<int64_t>(v)));
          break;
        }
        case 'U':
          push(bytes_of(byte()));
          break;     // SHORT_BINSTRING
        case 'T': {  // BINSTRING: signed 32-bit length
          const int32_t n = static_cast<int32_t>(static_cast<uint32_t>(le(4)));
          if (n < 0) corrupt("BINSTRING of negative length " + std::to_string(n));
          push(bytes_of(static_cast<size_t>(n)));
          break;
        }
        case 'X': {  // BINUNICODE
          Obj* o = bytes_of(le(4));
          o->kind = Obj::Kind::kText;
          push(o);
          break;
        }
        case 'q':
          memo_put(byte());
          break;
        case 'r':
          memo_put(le(4));
          break;
        case 'h':
          memo_get(byte());
          break;
        case 'j':
          memo_get(le(4));
          break;
        case 't': {
          Obj* t = make(Obj::Kind::kTuple);
          t->items = pop_to_mark();
          push(t);
          break;
        }
        case 0x85:
        case 0x86:
        case 0x87: {  // TUPLE1..3
          const size_t n = op - 0x84;
          if (stack_.size() < n + floor()) corrupt("TUPLE" + std::to_string(n) + " on a short stack");
          Obj* t = make(Obj::Kind::kTuple);
          t->items.assign(stack_.end() - static_cast<ptrdiff_t>(n), stack_.end());
          stack_.resize(stack_.size() - n);
          push(t);
          break;
        }
        case 'a': {  // APPEND
          Obj* v = pop();
          expect(top(), Obj::Kind::kList, "APPEND")->items.push_back(v);
          break;
        }
        case 'e': {  // APPENDS
          std::vector<Obj*> vs = pop_to_mark();
          Obj* list = expect(top(), Obj::Kind::kList, "APPENDS");
          list->items.insert(list->items.end(), vs.begin(), vs.end());
          break;
        }
        case 's': {  // SETITEM
          Obj* v = pop();
          Obj* k = pop();
          set_items(expect(top(), Obj::Kind::kDict, "SETITEM"), {k, v});
          break;
        }
        case 'u': {  // SETITEMS
          std::vector<Obj*> kv = pop_to_mark();
          if (kv.size() % 2 != 0) corrupt("SETITEMS with an odd number of values");
          set_items(expect(top(), Obj::Kind::kDict, "SETITEMS"), kv);
          break;
        }
        case 'c':
          push(global());
          break;
        case 'R': {
          Obj* args = expect(pop(), Obj::Kind::kTuple, "REDUCE arguments");
          Obj* callable = expect(pop(), Obj::Kind::kGlobal, "REDUCE");
          push(reduce(callable->text, args->items));
          break;
        }
        case 'b': {
          Obj* state = pop();
          build(top(), state);
          break;
        }
        default: {
          char buf[8];
          std::snprintf(buf, sizeof buf, "0x%02x", op);
          unsupported(std::string("opcode ") + buf);
        }
      }
    }
  }

 private:
  [[noreturn]] void fail(Code code, const std::string& what) const {
    throw_error(code, where_ + ": " + what + " at offset " + std::to_string(op_at_) +
                          " (the CIFAR-10 python batch reader accepts only the pickle subset those files use)");
  }
  [[noreturn]] void corrupt(const std::string& what) const { fail(Code::kCorruption, what); }
  [[noreturn]] void unsupported(const std::string& what) const {
    fail(Code::kInvalidArgument, what + " is not supported");
  }

  Obj* make(Obj::Kind kind) {
    if (arena_.size() >= kMaxPickleObjects)
      fail(Code::kResourceExhausted, "more than " + std::to_string(kMaxPickleObjects) + " values");
    arena_.push_back(std::make_unique<Obj>());
    arena_.back()->kind = kind;
    return arena_.back().get();
  }
  Obj* boolean(bool v) {
    Obj* o = make(Obj::Kind::kBool);
    o->number = v;
    return o;
  }
  Obj* integer(int64_t v) {
    Obj* o = make(Obj::Kind::kInt);
    o->number = v;
    return o;
  }

  uint8_t byte() {
    if (pos_ >= in_.size()) corrupt("truncated pickle (no STOP)");
    return static_cast<uint8_t>(in_[pos_++]);
  }
  uint64_t le(size_t n) {
    if (in_.size() - pos_ < n) corrupt("truncated pickle");
    uint64_t v = 0;
    for (size_t i = 0; i < n; ++i) v |= uint64_t{static_cast<uint8_t>(in_[pos_ + i])} << (8 * i);
    pos_ += n;
    return v;
  }
  Obj* bytes_of(uint64_t n) {
    if (in_.size() - pos_ < n)
      corrupt("a string of " + std::to_string(n) + " bytes runs past the end of the " + std::to_string(in_.size()) +
              "-byte pickle");
    Obj* o = make(Obj::Kind::kBytes);
    o->text.assign(in_.substr(pos_, static_cast<size_t>(n)));
    pos_ += static_cast<size_t>(n);
    return o;
  }

  size_t floor() const { return marks_.empty() ? 0 : marks_.back(); }
  void push(Obj* o) { stack_.push_back(o); }
  Obj* pop() {
    if (stack_.size() <= floor()) corrupt("pop from an empty stack");
    Obj* o = stack_.back();
    stack_.pop_back();
    return o;
  }
  Obj* top() {
    if (stack_.size() <= floor()) corrupt("an empty stack");
    return stack_.back();
  }
  std::vector<Obj*> pop_to_mark() {
    if (marks_.empty()) corrupt("no MARK");
    const size_t m = marks_.back();
    marks_.pop_back();
    std::vector<Obj*> out(stack_.begin() + static_cast<ptrdiff_t>(m), stack_.end());
    stack_.resize(m);
    return out;
  }
  Obj* expect(Obj* o, Obj::Kind kind, const std::string& what) {
    if (o->kind != kind) corrupt(what + " expects a " + kind_name(kind) + ", got a " + kind_name(o->kind));
    return o;
  }

  void memo_put(uint64_t index) {
    if (memo_.size() >= kMaxPickleObjects && !memo_.count(index))
      fail(Code::kResourceExhausted, "more than " + std::to_string(kMaxPickleObjects) + " memo entries");
    memo_[index] = top();
  }
  void memo_get(uint64_t index) {
    auto it = memo_.find(index);
    if (it == memo_.end()) corrupt("GET of memo entry " + std::to_string(index) + " that was never PUT");
    push(it->second);
  }

  static bool is_key(const Obj* o) { return o->kind == Obj::Kind::kBytes || o->kind == Obj::Kind::kText; }
  void set_items(Obj* dict, const std::vector<Obj*>& kv) {
    for (size_t i = 0; i < kv.size(); i += 2) {
      if (!is_key(kv[i])) unsupported(std::string("a dict key of type ") + kind_name(kv[i]->kind));
      dict->items.push_back(kv[i]);
      dict->items.push_back(kv[i + 1]);
    }
  }

  std::string line() {
    std::string s;
    while (true) {
      const char c = static_cast<char>(byte());
      if (c == '\n') return s;
      if (s.size() >= 64) corrupt("GLOBAL name longer than 64 bytes");
      s += c;
    }
  }
  Obj* global() {
    const std::string module = line();
    const std::string name = line();
    const std::string full = module + "." + name;
    if (full != kReconstruct && full != kReconstruct2 && full != kNdarray && full != kDtype && full != kEncode)
      unsupported("global '" + full + "'");
    Obj* o = make(Obj::Kind::kGlobal);
    o->text = full == kReconstruct2 ? kReconstruct : full;
    return o;
  }

  static bool is_int_like(const Obj* o) { return o->kind == Obj::Kind::kInt || o->kind == Obj::Kind::kBool; }

  Obj* reduce(const std::string& callable, const std::vector<Obj*>& args) {
    if (callable == kReconstruct) {
      // _reconstruct(ndarray, (0,), b"b"): an empty array that BUILD fills.
      if (args.size() != 3 || args[0]->kind != Obj::Kind::kGlobal || args[0]->text != kNdarray)
        unsupported("_reconstruct of anything but numpy.ndarray");
      return make(Obj::Kind::kArray);
    }
    if (callable == kDtype) {
      if (args.size() != 3 || !is_key(args[0]) || !is_int_like(args[1]) || !is_int_like(args[2]))
        corrupt("numpy.dtype expects (name, align, copy)");
      if (args[0]->text != "u1") unsupported("numpy dtype '" + args[0]->text.substr(0, 16) + "' (only u1)");
      Obj* d = make(Obj::Kind::kDtype);
      d->text = "u1";
      return d;
    }
    if (callable == kEncode) {
      // Python 3 writes bytes at protocol 2 as _codecs.encode(text, "latin1"),
      // the text holding one code point (<= U+00FF) per byte, in UTF-8.
      if (args.size() != 2 || args[0]->kind != Obj::Kind::kText || !is_key(args[1]) ||
          (args[1]->text != "latin1" && args[1]->text != "latin-1"))
        unsupported("_codecs.encode other than (text, 'latin1')");
      Obj* b = make(Obj::Kind::kBytes);
      b->text = latin1_from_utf8(args[0]->text);
      return b;
    }
    unsupported("calling " + callable);
  }

  std::string latin1_from_utf8(const std::string& s) const {
    std::string out;
    out.reserve(s.size());
    for (size_t i = 0; i < s.size(); ++i) {
      const auto c = static_cast<uint8_t>(s[i]);
      if (c < 0x80) {
        out += static_cast<char>(c);
      } else if ((c == 0xc2 || c == 0xc3) && i + 1 < s.size() && (static_cast<uint8_t>(s[i + 1]) & 0xc0) == 0x80) {
        out += static_cast<char>(((c & 0x03) << 6) | (static_cast<uint8_t>(s[i + 1]) & 0x3f));
        ++i;
      } else {
        corrupt("_codecs.encode text with a character above U+00FF or bad UTF-8 at byte " + std::to_string(i));
      }
    }
    return out;
  }

  void build(Obj* target, Obj* state) {
    if (target->kind == Obj::Kind::kDtype) {
      expect(state, Obj::Kind::kTuple, "numpy.dtype state");  // byte order etc.: meaningless for u1
      return;
    }
    if (target->kind != Obj::Kind::kArray || target->data)
      unsupported(std::string("BUILD of a ") + kind_name(target->kind));
    const std::vector<Obj*>& s = expect(state, Obj::Kind::kTuple, "numpy.ndarray state")->items;
    if (s.size() != 5 || s[0]->kind != Obj::Kind::kInt || s[0]->number != 1 || s[1]->kind != Obj::Kind::kTuple ||
        s[2]->kind != Obj::Kind::kDtype || !is_int_like(s[3]))
      corrupt("numpy.ndarray state is not (1, shape, dtype, fortran, data)");
    if (s[3]->number != 0) unsupported("a Fortran-order array");
    if (s[4]->kind != Obj::Kind::kBytes) unsupported(std::string("array data held in a ") + kind_name(s[4]->kind));
    uint64_t count = 1;
    for (const Obj* d : s[1]->items) {
      if (d->kind != Obj::Kind::kInt || d->number < 0 || d->number > static_cast<int64_t>(kMaxPickleBytes))
        corrupt("array shape entry is not a small non-negative int");
      count *= static_cast<uint64_t>(d->number);
      if (count > kMaxPickleBytes)
        corrupt("array shape claims more than " + std::to_string(kMaxPickleBytes) + " bytes");
      target->shape.push_back(d->number);
    }
    if (s[4]->text.size() != count)
      corrupt("array of " + std::to_string(count) + " uint8 values carries " + std::to_string(s[4]->text.size()) +
              " bytes");
    target->data = s[4];
  }

  std::string_view in_;
  const std::string& where_;
  size_t pos_ = 0, op_at_ = 0;
  std::vector<std::unique_ptr<Obj>> arena_;
  std::vector<Obj*> stack_;
  std::vector<size_t> marks_;
  std::unordered_map<uint64_t, Obj*> memo_;
};

const Obj* dict_get(const Obj* dict, const std::string& key) {
  const Obj* found = nullptr;
  for (size_t i = 0; i < dict->items.size(); i += 2)
    if (dict->items[i]->text == key) found = dict->items[i + 1];  // the last one wins, as in Python
  return found;
}

}  // namespace

LabeledImages parse_cifar_pickle(std::string_view bytes, const std::string& where) {
  Unpickler u(bytes, where);
  const Obj* root = u.run();
  if (root->kind != Obj::Kind::kDict)
    throw_error(Code::kCorruption, where + ": the pickle holds a " + kind_name(root->kind) + ", not a dict");
  const Obj* data = dict_get(root, "data");
  const Obj* labels = dict_get(root, "labels");
  if (!data || !labels)
    throw_error(Code::kCorruption, where + ": the dict has no '" + (data ? "labels" : "data") + "'");
  if (data->kind != Obj::Kind::kArray || !data->data)
    throw_error(Code::kCorruption, where + ": 'data' is a " + kind_name(data->kind) + ", not a uint8 numpy array");
  if (data->shape.size() != 2 || data->shape[1] != 3072)
    throw_error(Code::kCorruption,
                where + ": 'data' must have shape (N, 3072), got rank " + std::to_string(data->shape.size()) +
                    (data->shape.size() == 2 ? " with " + std::to_string(data->shape[1]) + " columns" : std::string()));
  const int64_t n = data->shape[0];
  if (labels->kind != Obj::Kind::kList || static_cast<int64_t>(labels->items.size()) != n)
    throw_error(Code::kCorruption, where + ": 'labels' must be a list of " + std::to_string(n) + " ints");
  LabeledImages out;
  out.labels.reserve(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) {
    const Obj* l = labels->items[static_cast<size_t>(i)];
    if (l->kind != Obj::Kind::kInt || l->number < 0 || l->number > 9)
      throw_error(Code::kCorruption, where + ": label " + std::to_string(i) + " is not an int in 0..9");
    out.labels.push_back(l->number);
  }
  out.images = Tensor(DType::kUInt8, Shape{n, 32, 32, 3});
  const auto* src = reinterpret_cast<const uint8_t*>(data->data->text.data());
  for (int64_t i = 0; i < n; ++i) cifar_planes_to_hwc(src + i * 3072, out.images.data<uint8_t>() + i * 3072);
  return out;
}

}  // namespace hub::data
