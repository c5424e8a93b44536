#include "core/graph/json_dom.h"

#include <cstdint>
#include <string>
#include <unordered_set>
#include <vector>

namespace fx {
namespace {

using json = nlohmann::json;

class DomBuilder : public nlohmann::json_sax<json> {
 public:
  DomBuilder(json& root, Diagnostics& problems) : root_(root), problems_(problems) {}

  bool null() override { return add(nullptr); }
  bool boolean(bool v) override { return add(v); }
  bool number_integer(number_integer_t v) override { return add(v); }
  bool number_unsigned(number_unsigned_t v) override {
    if (v > static_cast<number_unsigned_t>(INT64_MAX)) return too_large(std::to_string(v));
    return add(v);
  }
  // nlohmann reads an integer literal beyond 64 bits as a float; every integer in our formats is an int64.
  bool number_float(number_float_t v, const string_t& text) override {
    if (text.find_first_of(".eE") == string_t::npos) return too_large(text);
    return add(v);
  }
  bool string(string_t& v) override { return add(std::move(v)); }
  bool binary(binary_t& v) override { return add(json::binary(std::move(v))); }
  bool start_object(std::size_t) override { return open(json::object(), true); }
  bool start_array(std::size_t) override { return open(json::array(), false); }
  bool end_object() override { return close(); }
  bool end_array() override { return close(); }

  bool key(string_t& k) override {
    Frame& f = frames_.back();
    f.key = k;
    f.duplicate = !f.keys.insert(k).second;
    if (f.duplicate) problems_.push_back({pointer(), "duplicate key \"" + k + "\" (the first one counts)"});
    return true;
  }

  bool parse_error(std::size_t, const std::string&, const nlohmann::detail::exception& e) override {
    // Rethrown as the exception type json::parse throws, so callers keep one catch for both.
    if (const auto* p = dynamic_cast<const nlohmann::detail::parse_error*>(&e)) throw *p;
    if (const auto* o = dynamic_cast<const nlohmann::detail::out_of_range*>(&e)) throw *o;
    throw json::other_error::create(500, e.what(), nullptr);
  }

 private:
  struct Frame {
    json* node = nullptr;  // null while skipping (metadata) or below a duplicate key
    bool is_object = false;
    std::unordered_set<std::string> keys;
    std::string key;
    bool duplicate = false;
    std::size_t index = 0;  // arrays: the next element's index
  };

  std::string pointer() const {
    std::string p;
    for (const Frame& f : frames_) p += "/" + (f.is_object ? pointer_token(f.key) : std::to_string(f.index));
    return p;
  }

  // Where the next value goes: nullptr when it is dropped.
  json* slot() {
    if (frames_.empty()) return &root_;
    if (!slot_taken()) return nullptr;
    Frame& f = frames_.back();
    if (!f.is_object) return &f.node->emplace_back(nullptr);
    return &(*f.node)[f.key];
  }

  void advance() {
    if (!frames_.empty() && !frames_.back().is_object) ++frames_.back().index;
  }

  // An integer literal outside int64's range, where it would be stored (not in ignored metadata).
  bool too_large(const std::string& text) {
    if (slot_taken()) {
      problems_.push_back({pointer(), "integer " + text + " does not fit in 64 bits (an int64 holds " +
                                          std::to_string(INT64_MIN) + " to " + std::to_string(INT64_MAX) + ")"});
    }
    return add(nullptr);
  }

  // Whether the next value is stored: not below a duplicate key, not in "metadata" (ignored by the format).
  bool slot_taken() const {
    if (frames_.empty()) return true;
    const Frame& f = frames_.back();
    return f.node && !f.duplicate && !(f.is_object && frames_.size() == 1 && f.key == "metadata");
  }

  template <typename T>
  bool add(T&& v) {
    if (json* s = slot()) *s = json(std::forward<T>(v));
    advance();
    return true;
  }

  bool open(json empty, bool is_object) {
    json* s = slot();
    if (s) *s = std::move(empty);
    frames_.push_back({s, is_object, {}, {}, false, 0});
    return true;
  }

  bool close() {
    frames_.pop_back();
    advance();
    return true;
  }

  json& root_;
  Diagnostics& problems_;
  std::vector<Frame> frames_;
};

}  // namespace

nlohmann::json parse_json_dom(std::string_view text, Diagnostics& problems) {
  json root;
  DomBuilder builder(root, problems);
  json::sax_parse(text.begin(), text.end(), &builder);
  return root;
}

}  // namespace fx
