#pragma once
// An op's name, interned: every distinct text is stored once for the process, and a name is a pointer to it. A
// generated program repeats a few dozen names (qkv.fwd, tp.all_gather, ...) over millions of ops; as a std::string
// each op carried 32 bytes and, past 15 characters (attn.softmax.fwd, moe.dispatch.bwd), a heap copy of its own.
// Reads like the const std::string it stands for (it converts to one); equal texts are equal pointers.
// Interning is thread-safe (stage programs are generated on every core); names are never freed.

#include <compare>
#include <cstddef>
#include <iosfwd>
#include <string>
#include <string_view>

namespace gputwin::traces {

class InternedName {
public:
  InternedName(); // ""
  InternedName(std::string_view text);
  InternedName(const std::string& text) : InternedName(std::string_view(text)) {}
  InternedName(const char* text) : InternedName(std::string_view(text)) {}

  const std::string& str() const { return *text_; }
  operator const std::string&() const { return *text_; }
  operator std::string_view() const { return *text_; }

  const char* c_str() const { return text_->c_str(); }
  const char* data() const { return text_->data(); }
  size_t size() const { return text_->size(); }
  size_t length() const { return text_->size(); }
  bool empty() const { return text_->empty(); }
  char back() const { return text_->back(); }
  char front() const { return text_->front(); }
  char operator[](size_t i) const { return (*text_)[i]; }
  std::string::const_iterator begin() const { return text_->begin(); }
  std::string::const_iterator end() const { return text_->end(); }
  size_t find(std::string_view s, size_t pos = 0) const { return text_->find(s, pos); }
  size_t find(char c, size_t pos = 0) const { return text_->find(c, pos); }
  size_t rfind(std::string_view s, size_t pos = std::string::npos) const { return text_->rfind(s, pos); }
  size_t rfind(char c, size_t pos = std::string::npos) const { return text_->rfind(c, pos); }
  std::string substr(size_t pos = 0, size_t count = std::string::npos) const { return text_->substr(pos, count); }
  bool starts_with(std::string_view s) const { return text_->starts_with(s); }
  bool ends_with(std::string_view s) const { return text_->ends_with(s); }
  int compare(std::string_view s) const { return text_->compare(s); }
  int compare(size_t pos, size_t count, std::string_view s) const { return text_->compare(pos, count, s); }

  // The name with `suffix` appended (interned anew).
  InternedName& operator+=(std::string_view suffix) { return *this = InternedName(*text_ + std::string(suffix)); }

  friend bool operator==(const InternedName& a, const InternedName& b) { return a.text_ == b.text_; }
  friend bool operator==(const InternedName& a, const char* b) { return *a.text_ == b; }
  friend bool operator==(const InternedName& a, const std::string& b) { return *a.text_ == b; }
  friend bool operator==(const InternedName& a, std::string_view b) { return *a.text_ == b; }
  // Ordered by text, as the std::string was.
  friend std::strong_ordering operator<=>(const InternedName& a, const InternedName& b)
  {
    return a.text_ == b.text_ ? std::strong_ordering::equal : *a.text_ <=> *b.text_;
  }
  friend std::string operator+(const InternedName& a, std::string_view b) { return std::string(*a.text_).append(b); }
  friend std::string operator+(const std::string& a, const InternedName& b) { return a + *b.text_; }
  friend std::string operator+(const char* a, const InternedName& b) { return a + *b.text_; }
  friend std::ostream& operator<<(std::ostream& out, const InternedName& name);

private:
  const std::string* text_;
};

} // namespace gputwin::traces
