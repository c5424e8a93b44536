// Identifiers for generated kernels: readable where the graph's names allow, unique always, linear in the names.
#include "kernels/codegen/identifiers.h"

#include <algorithm>
#include <array>
#include <charconv>
#include <functional>

namespace fx::gpu::codegen {

namespace {

// Names that would shadow the kernel's own variables or CUDA's (sorted: looked up by binary search).
constexpr auto kReserved = [] {
  auto words = std::to_array<std::string_view>({
      "i", "v", "k", "c", "n", "row", "col", "base", "int", "float", "double", "char", "long", "short", "bool", "if",
      "else", "for", "while", "do", "return", "const", "auto", "switch", "case", "default", "break", "continue",
      "unsigned", "signed", "void", "struct", "class", "new", "delete", "this", "true", "false", "sizeof", "static",
      "extern", "register", "volatile", "template", "typename", "namespace", "operator", "union", "enum", "goto",
      // the generators' own locals (row, tiled transpose, reductions)
      "a", "b", "a0", "b0", "aa", "bb", "A", "B", "R", "d", "j", "o", "len", "acc", "row_max", "row_sum", "inv_sum",
      "sq", "mean", "rstd", "fibres", "lane", "warp", "rows", "col_of", "tiles_a", "tiles_b", "kChunks", "kItems",
      "kRows", "kTile", "kVec", "kThreads", "idx", "tid", "step", "stride",
      // CUDA built-ins and the math functions the expressions call
      "threadIdx", "blockIdx", "blockDim", "gridDim", "warpSize", "expf", "logf", "sqrtf", "rsqrtf", "tanhf", "erff",
      "sinf", "cosf", "powf", "fabsf", "fmaxf", "fminf", "exp", "log", "sqrt", "tanh", "erf", "sin", "cos", "pow",
      "abs", "min", "max"});
  std::sort(words.begin(), words.end());
  return words;
}();
constexpr std::size_t kLongestReserved =
    std::max_element(kReserved.begin(), kReserved.end(), [](auto a, auto b) { return a.size() < b.size(); })->size();

// For each length, a bit per first letter that some reserved word of that length starts with: most
// identifiers are told apart without a search.
constexpr auto kReservedStarts = [] {
  std::array<std::uint64_t, kLongestReserved + 1> starts{};
  for (std::string_view w : kReserved) starts[w.size()] |= std::uint64_t{1} << ((w[0] - 'A') & 63);
  return starts;
}();

bool reserved(std::string_view id) {
  if (id.empty() || id.size() > kLongestReserved || !(kReservedStarts[id.size()] >> ((id[0] - 'A') & 63) & 1)) return false;
  return std::binary_search(kReserved.begin(), kReserved.end(), id);
}

// The characters C identifiers allow, in ASCII whatever the locale (a locale could call 'é' a letter).
bool identifier_char(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9');
}

}  // namespace

std::size_t KeyTable::slot_of(std::uint32_t key) const {
  const std::uint64_t block = (key >> 6) * 0x9E3779B97F4A7C15ull;
  return static_cast<std::size_t>(((block >> 32) << 6) | (key & 63)) & (slots_.size() - 1);
}

void KeyTable::grow(std::size_t capacity) {
  std::vector<Slot> old = std::move(slots_);
  slots_.assign(capacity, Slot{});
  for (const Slot& s : old) {
    if (s.key == 0) continue;
    std::size_t i = slot_of(s.key - 1);
    while (slots_[i].key != 0) i = (i + 1) & (slots_.size() - 1);
    slots_[i] = s;
  }
}

void KeyTable::reserve(std::size_t n) {
  std::size_t capacity = std::max<std::size_t>(slots_.size(), 16);
  while (capacity < 2 * (size_ + n)) capacity *= 2;
  if (capacity != slots_.size()) grow(capacity);
}

std::uint32_t& KeyTable::find_or_insert(std::uint32_t key, bool& inserted) {
  if (2 * (size_ + 1) > slots_.size()) reserve(1);
  for (std::size_t i = slot_of(key);; i = (i + 1) & (slots_.size() - 1)) {
    Slot& s = slots_[i];
    if (s.key == key + 1) {
      inserted = false;
      return s.value;
    }
    if (s.key == 0) {
      s = Slot{key + 1, 0};
      ++size_;
      inserted = true;
      return s.value;
    }
  }
}

std::string_view Identifiers::text_at(std::uint32_t at) const {
  const char* p = text_.data() + at - 1;
  return {p, std::char_traits<char>::length(p)};
}

// Names that differ only in a trailing number ("x0", "x1", ... of a wide concat) get neighbouring home slots, 64
// to a block, so a kernel that names them in order walks its table in order; a hash spreads the blocks.
std::uint32_t Identifiers::home_of(std::string_view id) {
  std::size_t stem = id.size();
  while (stem > 0 && id.size() - stem < 9 && id[stem - 1] >= '0' && id[stem - 1] <= '9') --stem;
  std::uint64_t number = 0;
  for (char c : id.substr(stem)) number = number * 10 + static_cast<std::uint64_t>(c - '0');
  const std::uint64_t block = (std::hash<std::string_view>{}(id.substr(0, stem)) + (number >> 6)) * 0x9E3779B97F4A7C15ull;
  return static_cast<std::uint32_t>(((block >> 32) << 6) | (number & 63));
}

void Identifiers::grow(std::size_t capacity) {
  std::vector<Slot> old = std::move(slots_);
  slots_.assign(capacity, Slot{});
  for (const Slot& s : old) {
    if (s.at == 0) continue;
    std::size_t i = s.home & (capacity - 1);
    while (slots_[i].at != 0) i = (i + 1) & (capacity - 1);
    slots_[i] = s;
  }
}

void Identifiers::reserve(std::size_t identifiers, std::size_t input_pointers) {
  std::size_t capacity = std::max<std::size_t>(slots_.size(), 64);
  while (capacity < 2 * (size_ + identifiers)) capacity *= 2;
  if (capacity != slots_.size()) grow(capacity);
  if (input_pointers) keyed_[static_cast<std::size_t>(Kind::input_pointer)].reserve(input_pointers);
}

Identifiers::Slot& Identifiers::slot_for(std::string_view id, std::uint32_t home) {
  if (slots_.empty()) reserve(0);
  const std::string_view text = text_;
  for (std::size_t i = home & (slots_.size() - 1);; i = (i + 1) & (slots_.size() - 1)) {
    Slot& s = slots_[i];
    // Equal when text_ holds id at s.at, followed by its '\0' (a longer identifier would go on).
    if (s.at == 0 || (s.home == home && text.substr(s.at - 1, id.size()) == id && text[s.at - 1 + id.size()] == '\0')) {
      return s;
    }
  }
}

std::uint32_t Identifiers::add(std::string_view id, std::uint32_t home, Slot& slot) {
  const auto at = static_cast<std::uint32_t>(text_.size() + 1);
  text_.append(id);
  text_ += '\0';
  ++size_;
  if (2 * size_ <= slots_.size()) {
    slot = Slot{at, home};
  } else {
    reserve(size_);  // doubles the table, which moves every slot: find the new one's place again
    slot_for(id, home) = Slot{at, home};
  }
  return at;
}

std::string Identifiers::claim() {
  const std::uint32_t home = home_of(base_);
  Slot& slot = slot_for(base_, home);
  std::uint32_t base_at = slot.at;
  if (base_at == 0) {
    if (!reserved(base_)) {
      add(base_, home, slot);
      return base_;
    }
    base_at = add(base_, home, slot);  // a reserved word enters the set as taken, to keep a counter like any base
  }
  // Many names can share a base ("ñ", "é", "x.1" and "x:1" all map to few): each base remembers the next
  // suffix to try, so n such names cost n look-ups, not n^2. A suffixed id can itself be taken by a name
  // ("x_2"); the loop steps past those.
  bool inserted = false;
  std::uint32_t& next = next_suffix_.find_or_insert(base_at, inserted);  // add() below leaves next_suffix_ alone
  if (inserted) next = 2;
  const std::size_t stem = base_.size();
  for (;;) {
    char digits[16];
    const auto end = std::to_chars(digits, digits + sizeof digits, next++).ptr;
    base_.resize(stem);
    base_.append("_").append(digits, end);
    const std::uint32_t h = home_of(base_);
    Slot& candidate = slot_for(base_, h);
    if (candidate.at != 0 || reserved(base_)) continue;
    add(base_, h, candidate);
    return base_;
  }
}

std::string Identifiers::fresh(std::string_view name, std::string_view suffix) {
  base_.clear();
  for (std::string_view part : {name, suffix}) {
    for (char c : part) base_ += identifier_char(c) ? c : '_';
  }
  // A digit cannot start an identifier; names beginning with "__" are the compiler's and "fx_" the
  // preamble's. Any other base (a non-ASCII name is all underscores) keeps its characters.
  if (base_.empty() || (base_[0] >= '0' && base_[0] <= '9')) base_.insert(0, "t_");
  if (base_[0] == '_' || base_.starts_with("fx_")) base_.insert(0, "t");
  return claim();
}

std::string Identifiers::get(Kind kind, std::int32_t id, std::string_view prefix, std::string_view name) {
  bool inserted = false;
  // fresh() leaves keyed_ alone: `at` stays valid
  std::uint32_t& at = keyed_[static_cast<std::size_t>(kind)].find_or_insert(static_cast<std::uint32_t>(id), inserted);
  if (!inserted) return std::string(text_at(at));
  std::string made = fresh(prefix, name);
  at = static_cast<std::uint32_t>(text_.size() - made.size());  // fresh() appended it last, then its '\0'
  return made;
}

}  // namespace fx::gpu::codegen
