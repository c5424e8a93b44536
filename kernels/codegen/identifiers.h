// Internal to kernels/codegen: the C identifiers of one kernel. A name that is already a valid identifier stays
// as it is ("x", "in_x"), so generated code reads like the graph; others get '_' for each character C does not
// allow, and a counter suffix when taken ("c_2"). Sized for kernels of 100,000s of operands (a wide concat): the
// work per identifier is one hash and about one slot of a flat table, with no allocation of its own.
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace fx::gpu::codegen {

// A set of 32-bit keys (value or node ids), each with a 32-bit value, in one open-addressing array of 8-byte
// slots. Keys that differ only in their low 6 bits land in neighbouring slots, so the consecutive ids of a wide
// operand list are looked up in order through memory instead of at random.
class KeyTable {
 public:
  // The value stored under `key`, a new 0 when the key is new (`inserted` says which); valid until the next insert.
  std::uint32_t& find_or_insert(std::uint32_t key, bool& inserted);
  void reserve(std::size_t n);

 private:
  struct Slot {
    std::uint32_t key = 0;  // stored as key + 1: 0 marks an empty slot (ids are below 2^31)
    std::uint32_t value = 0;
  };
  std::size_t slot_of(std::uint32_t key) const;
  void grow(std::size_t capacity);
  std::vector<Slot> slots_;
  std::size_t size_ = 0;
};

// Unique C identifiers for the names of one kernel.
class Identifiers {
 public:
  // What a keyed identifier stands for: the same value can have a pointer parameter in and out.
  enum class Kind : std::uint8_t { input_pointer, output_pointer, staged_array, count };
  // The identifier for (kind, id), made from prefix + name the first time.
  std::string get(Kind kind, std::int32_t id, std::string_view prefix, std::string_view name);
  // A new identifier made from name + suffix.
  std::string fresh(std::string_view name, std::string_view suffix = {});
  // Room for `identifiers` more identifiers, `input_pointers` of them from get(), so that a wide kernel fills
  // its tables without regrowing them.
  void reserve(std::size_t identifiers, std::size_t input_pointers = 0);

 private:
  // An identifier in the set: where it starts in text_, and its home slot (see home_of), which both places it
  // and filters comparisons.
  struct Slot {
    std::uint32_t at = 0;  // offset + 1 in text_; 0 marks an empty slot
    std::uint32_t home = 0;
  };
  static std::uint32_t home_of(std::string_view id);
  // The slot holding `id`, or the empty slot where it would go.
  Slot& slot_for(std::string_view id, std::uint32_t home);
  // Adds id (not yet in the set) in `slot`, growing the table when needed; returns where it starts (offset + 1).
  std::uint32_t add(std::string_view id, std::uint32_t home, Slot& slot);
  void grow(std::size_t capacity);
  std::string_view text_at(std::uint32_t at) const;
  // The identifier made from base_ (which holds the valid base): the base when free, else base_<counter>.
  std::string claim();

  std::string text_;          // every identifier, each ending in '\0'
  std::vector<Slot> slots_;   // open addressing over text_, power-of-two size
  std::size_t size_ = 0;
  std::array<KeyTable, static_cast<std::size_t>(Kind::count)> keyed_;  // per kind: id -> offset + 1 in text_
  KeyTable next_suffix_;      // offset + 1 of a base that was taken -> the next counter suffix to try
  std::string base_;          // scratch for the identifier being made
};

}  // namespace fx::gpu::codegen
