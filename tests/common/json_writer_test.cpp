#include "gputwin/common/json_writer.hpp"

#include <gtest/gtest.h>

#include <limits>
#include <sstream>

namespace gputwin::traces {
namespace {

TEST(JsonWriter, NestedObjectsAndArrays)
{
  std::ostringstream out;
  JsonWriter json(out, 0);
  json.begin_object();
  json.field("name", "a \"b\"\n");
  json.field("bytes", int64_t{106954752});
  json.field("ratio", 0.1);
  json.field("ok", true);
  json.key("list");
  json.begin_array();
  json.value(1);
  json.value(2.5);
  json.null();
  json.end_array();
  json.key("empty");
  json.begin_object();
  json.end_object();
  json.end_object();
  EXPECT_TRUE(json.done());
  EXPECT_EQ(out.str(),
            R"({"name":"a \"b\"\n","bytes":106954752,"ratio":0.1,"ok":true,"list":[1,2.5,null],"empty":{}})");
}

TEST(JsonWriter, IndentedLayout)
{
  std::ostringstream out;
  JsonWriter json(out, 2);
  json.begin_object();
  json.field("a", 1);
  json.end_object();
  EXPECT_EQ(out.str(), "{\n  \"a\": 1\n}\n");
}

TEST(JsonWriter, NumbersRoundTripAndNonFiniteIsNull)
{
  EXPECT_EQ(json_number(1.0 / 3.0), "0.3333333333333333");
  EXPECT_EQ(json_number(1e300), "1e+300");
  EXPECT_EQ(json_number(2.0), "2");
  EXPECT_EQ(json_number(std::numeric_limits<double>::infinity()), "null");
  EXPECT_EQ(json_escape(std::string("\x01", 1)), "\\u0001");
}

TEST(JsonWriter, MisuseIsALogicError)
{
  std::ostringstream out;
  JsonWriter json(out);
  json.begin_object();
  EXPECT_THROW(json.value(1), std::logic_error);
  EXPECT_THROW(json.end_array(), std::logic_error);
}

} // namespace
} // namespace gputwin::traces
