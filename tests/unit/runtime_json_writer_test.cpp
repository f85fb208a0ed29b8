// Tests of runtime/json_writer: exact layout, escaping, numbers, nesting.
#include "json_writer.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <limits>

using tilegraph::rt::JsonWriter;

namespace {

TEST(JsonWriter, PrettyObjectWithCompactArrays) {
  JsonWriter j;
  j.begin_object();
  j.field("name", "x");
  j.key("shape");
  j.begin_array(true);
  j.value(2);
  j.value(3);
  j.end_array();
  j.key("empty");
  j.begin_array();
  j.end_array();
  j.key("inner");
  j.begin_object();
  j.field("ok", true);
  j.key("none");
  j.null();
  j.end_object();
  j.end_object();
  EXPECT_EQ(j.str(),
            "{\n"
            "  \"name\": \"x\",\n"
            "  \"shape\": [2, 3],\n"
            "  \"empty\": [],\n"
            "  \"inner\": {\n"
            "    \"ok\": true,\n"
            "    \"none\": null\n"
            "  }\n"
            "}\n");
}

TEST(JsonWriter, ContainersInsideCompactOnesStayCompact) {
  JsonWriter j;
  j.begin_array(true);
  j.begin_object();
  j.field("a", 1);
  j.end_object();
  j.begin_array();
  j.end_array();
  j.end_array();
  EXPECT_EQ(j.str(), "[{\"a\": 1}, []]\n");
}

TEST(JsonWriter, EscapesEverythingJsonRequires) {
  JsonWriter j;
  j.begin_array(true);
  j.value(std::string("q\"b\\n\nr\rt\tb\bf\f") + '\x01' + '\x1f' + "\xc3\xa9/");
  j.end_array();
  EXPECT_EQ(j.str(), "[\"q\\\"b\\\\n\\nr\\rt\\tb\\bf\\f\\u0001\\u001f\xc3\xa9/\"]\n");
}

TEST(JsonWriter, NumbersAreExactOrNull) {
  JsonWriter j;
  j.begin_array(true);
  j.value(0.1);
  j.value(1e-7);
  j.value(-2.5);
  j.value(INFINITY);
  j.value(NAN);
  j.value(std::numeric_limits<int64_t>::min());
  j.value(std::numeric_limits<uint64_t>::max());
  j.value(size_t(7));
  j.value(false);
  j.end_array();
  EXPECT_EQ(j.str(), "[0.1, 1e-07, -2.5, null, null, -9223372036854775808, 18446744073709551615, 7, false]\n");
}

}  // namespace
