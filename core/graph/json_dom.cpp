#include "core/graph/json_dom.h"

#include <string>
#include <unordered_set>
#include <vector>

namespace fx {
namespace {

using json = nlohmann::json;

class DomBuilder : public nlohmann::json_sax<json> {
 public:
  DomBuilder(json& root, Diagnostics& duplicates) : root_(root), duplicates_(duplicates) {}

  bool null() override { return add(nullptr); }
  bool boolean(bool v) override { return add(v); }
  bool number_integer(number_integer_t v) override { return add(v); }
  bool number_unsigned(number_unsigned_t v) override { return add(v); }
  bool number_float(number_float_t v, const string_t&) override { return add(v); }
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
    if (f.duplicate) duplicates_.push_back({pointer(), "duplicate key \"" + k + "\" (the first one counts)"});
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
    Frame& f = frames_.back();
    if (!f.node || f.duplicate) return nullptr;
    if (!f.is_object) return &f.node->emplace_back(nullptr);
    if (frames_.size() == 1 && f.key == "metadata") return nullptr;  // ignored by the format: never stored
    return &(*f.node)[f.key];
  }

  void advance() {
    if (!frames_.empty() && !frames_.back().is_object) ++frames_.back().index;
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
  Diagnostics& duplicates_;
  std::vector<Frame> frames_;
};

}  // namespace

nlohmann::json parse_json_dom(std::string_view text, Diagnostics& duplicates) {
  json root;
  DomBuilder builder(root, duplicates);
  json::sax_parse(text.begin(), text.end(), &builder);
  return root;
}

}  // namespace fx
