"""The code of a C/C++/CUDA source with its comments and literals blanked out.

Used to check that text from a model (names, doc strings) never lands in
generated code outside a comment or a string literal. Follows the lexer's
rules that matter for that: `//` comments continue past a backslash-newline,
`/* */` comments, "..." and '...' literals with backslash escapes, and raw
string literals R"delim(...)delim".
"""
import re

_RAW_START = re.compile(r'(?:u8|u|U|L)?R"([^()\\ \t\n]{0,16})\(')


def code_only(text):
    """text with every comment and literal replaced by one space (newlines kept)."""
    out = []
    i, n = 0, len(text)
    while i < n:
        c = text[i]
        if text.startswith("//", i):
            # A line comment ends at a newline not preceded by a backslash.
            j = i + 2
            while j < n and not (text[j] == "\n" and text[j - 1] != "\\"):
                j += 1
            out.append(" ")
            i = j
        elif text.startswith("/*", i):
            j = text.find("*/", i + 2)
            j = n if j < 0 else j + 2
            out.append(" " + "\n" * text.count("\n", i, j))
            i = j
        elif (m := _RAW_START.match(text, i)) and (i == 0 or not (text[i - 1].isalnum() or text[i - 1] == "_")):
            end = text.find(")" + m.group(1) + '"', m.end())
            j = n if end < 0 else end + len(m.group(1)) + 2
            out.append(" ")
            i = j
        elif c in "\"'":
            j = i + 1
            while j < n and text[j] != c and text[j] != "\n":
                j += 2 if text[j] == "\\" else 1
            out.append(" ")
            i = j + 1
        else:
            out.append(c)
            i += 1
    return "".join(out)
