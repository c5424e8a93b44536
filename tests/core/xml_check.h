// A strict XML well-formedness check for the session report's tests: every element closed and nested, attribute
// values quoted and unique, only XML's predefined and numeric character references, nothing after the root.
// A DOCTYPE is allowed before the root (the report is XHTML served as HTML5).
#pragma once

#include <cctype>
#include <set>
#include <string>
#include <vector>

namespace fx::test {

class XmlCheck {
 public:
  explicit XmlCheck(const std::string& text) : s_(text) {}
  // "" when well-formed, else what is wrong and at which byte offset.
  std::string run() {
    skip_prolog();
    if (!at("<")) return fail("no root element");
    if (!element()) return error_;
    skip_space();
    while (at("<!--")) {
      if (!comment()) return error_;
      skip_space();
    }
    if (i_ != s_.size()) return fail("text after the root element");
    return error_;
  }

 private:
  bool at(const char* p) const { return s_.compare(i_, std::char_traits<char>::length(p), p) == 0; }
  std::string fail(const std::string& what) {
    if (error_.empty()) error_ = what + " at byte " + std::to_string(i_);
    return error_;
  }
  bool bad(const std::string& what) {
    fail(what);
    return false;
  }
  void skip_space() {
    while (i_ < s_.size() && std::isspace(static_cast<unsigned char>(s_[i_]))) ++i_;
  }
  void skip_prolog() {
    skip_space();
    if (at("<?xml")) i_ = s_.find("?>", i_) + 2;
    skip_space();
    if (at("<!DOCTYPE")) i_ = s_.find('>', i_) + 1;
    skip_space();
  }
  std::string name() {
    const std::size_t start = i_;
    while (i_ < s_.size() && (std::isalnum(static_cast<unsigned char>(s_[i_])) || s_[i_] == '-' || s_[i_] == '_' ||
                              s_[i_] == ':' || s_[i_] == '.'))
      ++i_;
    return s_.substr(start, i_ - start);
  }
  bool reference() {
    const std::size_t end = s_.find(';', i_);
    if (end == std::string::npos || end - i_ > 10) return bad("an unterminated character reference");
    const std::string ref = s_.substr(i_ + 1, end - i_ - 1);
    static const std::set<std::string> kNamed{"amp", "lt", "gt", "quot", "apos"};
    const bool numeric = ref.size() > 1 && ref[0] == '#';
    if (!kNamed.count(ref) && !numeric) return bad("the entity &" + ref + "; is not defined in XML");
    i_ = end + 1;
    return true;
  }
  bool text_until_tag() {
    while (i_ < s_.size() && s_[i_] != '<') {
      if (s_[i_] != '&') ++i_;
      else if (!reference()) return false;
    }
    return true;
  }
  bool comment() {
    const std::size_t end = s_.find("-->", i_ + 4);
    if (end == std::string::npos) return bad("an unterminated comment");
    i_ = end + 3;
    return true;
  }
  bool attributes(bool& self_closing) {
    std::set<std::string> seen;
    for (;;) {
      skip_space();
      if (at("/>")) {
        i_ += 2;
        self_closing = true;
        return true;
      }
      if (at(">")) {
        ++i_;
        return true;
      }
      const std::string attr = name();
      if (attr.empty()) return bad("a malformed attribute");
      if (!seen.insert(attr).second) return bad("the attribute " + attr + " twice");
      skip_space();
      if (!at("=")) return bad("attribute " + attr + " without a value");
      ++i_;
      skip_space();
      if (i_ >= s_.size() || (s_[i_] != '"' && s_[i_] != '\'')) return bad("an unquoted value of " + attr);
      const char quote = s_[i_++];
      while (i_ < s_.size() && s_[i_] != quote) {
        if (s_[i_] == '<') return bad("'<' inside the value of " + attr);
        if (s_[i_] != '&') ++i_;
        else if (!reference()) return false;
      }
      if (i_ >= s_.size()) return bad("an unterminated value of " + attr);
      ++i_;
    }
  }
  bool element() {
    ++i_;  // '<'
    const std::string tag = name();
    if (tag.empty()) return bad("a malformed start tag");
    bool self_closing = false;
    if (!attributes(self_closing)) return false;
    if (self_closing) return true;
    for (;;) {
      if (!text_until_tag()) return false;
      if (i_ >= s_.size()) return bad("<" + tag + "> is never closed");
      if (at("<!--")) {
        if (!comment()) return false;
      } else if (at("</")) {
        i_ += 2;
        const std::string closing = name();
        skip_space();
        if (closing != tag || !at(">")) return bad("</" + closing + "> closes <" + tag + ">");
        ++i_;
        return true;
      } else if (!element()) {
        return false;
      }
    }
  }

  const std::string& s_;
  std::size_t i_ = 0;
  std::string error_;
};

inline std::string xml_error(const std::string& text) { return XmlCheck(text).run(); }

}  // namespace fx::test
