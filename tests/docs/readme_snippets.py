"""The READMEs' C++ blocks, made checkable: python3 readme_snippets.py SOURCE_DIR OUT_DIR

Writes each ```cpp block of every README.md into OUT_DIR as a source file whose name says what to
do with it (tests/downstream/run.sh then does it, against the installed library):

  NAME.run.cpp      a whole program (it has `int main(`), or a fragment wrapped into one: built, run
  NAME.compile.cpp  a fragment that only compiles (it trains for 50 000 steps, or needs an MPI
                    launch): built with -fsyntax-only

and checks, here, the blocks that quote axiom's own source. A hidden comment just above a block
says which kind it is (none: a fragment to run):

  <!-- snippet: run            a fragment to run, after the lines below at file scope
  Tensor images = ...;
  -->
  <!-- snippet: compile        a fragment to compile only; `extern` declares what it uses
  extern Tensor images;
  -->
  <!-- snippet: quote nn/blocks.h nn/blocks.cpp -->
                               each code line of the block is a line of one of those files
                               (comments and indentation aside)

A fragment is wrapped as: #include <axiom/axiom.h>, `using namespace axiom;`, the comment's
lines, then the block as the body of main(), where an exception is printed and exits 1. Prints one line per block; exits 1 when a quote no
longer matches its source.
"""

import pathlib
import re
import sys

BLOCK = re.compile(r"(?:<!-- snippet: (\w+)([^\n]*)\n?(.*?)-->\n)?```cpp\n(.*?)```", re.S)


def readmes(source_dir):
    for path in sorted(source_dir.rglob("README.md")):
        relative = path.relative_to(source_dir)
        if not relative.parts[0].startswith(("build", ".")):
            yield relative


def code_lines(text):
    """The lines of C++ text without // comments and surrounding blanks, empty lines dropped."""
    lines = (re.sub(r"\s*//.*$", "", line).strip() for line in text.splitlines())
    return [line for line in lines if line]


def check_quote(source_dir, files, block):
    """The code lines of `block` that are in none of `files`."""
    if not files:
        return ["(the quote names no file)"]
    known = set()
    for name in files:
        path = source_dir / name
        if not path.is_file():
            return [f"(no file {name})"]
        known.update(code_lines(path.read_text()))
    return [line for line in code_lines(block) if line not in known]


def wrap(context, block):
    return ("#include <axiom/axiom.h>\n#include <iostream>\nusing namespace axiom;\n" + context +
            "\nint main() {\n  try {\n" + block +
            "  } catch (const std::exception& error) {\n    std::cerr << error.what() << '\\n';\n    return 1;\n  }\n}\n")


def main(source_dir, out_dir):
    out_dir.mkdir(parents=True, exist_ok=True)
    stale = 0
    for readme in readmes(source_dir):
        text = (source_dir / readme).read_text()
        for match in BLOCK.finditer(text):
            kind, arguments, context, block = match.group(1) or "run", match.group(2), match.group(3) or "", match.group(4)
            line = text.count("\n", 0, match.start(4))
            where = f"{readme}:{line}"
            name = f"{str(readme.parent).replace('/', '_').replace('.', 'top')}-{line}"
            if kind == "quote":
                missing = check_quote(source_dir, arguments.split(), block)
                print(f"{where}: quote of {arguments.strip()}: " + ("matches" if not missing else "STALE"))
                for code in missing:
                    print(f"  not in {arguments.strip()}: {code}")
                stale += bool(missing)
            elif "int main(" in block:
                (out_dir / f"{name}.run.cpp").write_text(f"// {where}\n" + block)
            elif kind in ("run", "compile"):
                (out_dir / f"{name}.{kind}.cpp").write_text(f"// {where}\n" + wrap(context, block))
            else:
                print(f"{where}: unknown snippet kind '{kind}' (run, compile or quote)")
                stale += 1
    return 1 if stale else 0


if __name__ == "__main__":
    if len(sys.argv) != 3:
        sys.exit("usage: python3 readme_snippets.py SOURCE_DIR OUT_DIR")
    sys.exit(main(pathlib.Path(sys.argv[1]), pathlib.Path(sys.argv[2])))
