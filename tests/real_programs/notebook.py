"""A Jupyter notebook's code as a Python script (TensorFlow's guides are notebooks)."""
import ast
import json

_DISPLAY = "_ = ({})\nif _ is not None:\n    print('Out:', repr(_))"


def _cell_script(source):
    """One code cell's lines without IPython's shell (`!pip install ...`) and magic
    (`%load_ext ...`) lines; the value of its last expression printed as `Out: repr`, as
    the notebook displays it (unless None or ended by `;`)."""
    lines = [line for line in source.splitlines()
             if not line.lstrip().startswith(("!", "%"))]
    code = "\n".join(lines)
    try:
        body = ast.parse(code).body
    except SyntaxError:
        return "\n".join(lines)
    last = body[-1] if body else None
    if not isinstance(last, ast.Expr) or lines[last.end_lineno - 1].rstrip().endswith(";"):
        return "\n".join(lines)
    expression = ast.get_source_segment(code, last)  # without a trailing comment
    return "\n".join(lines[:last.lineno - 1] + [_DISPLAY.format(expression)]
                      + lines[last.end_lineno:])


def notebook_source(path):
    """The code cells of the notebook at `path`, in order, as one script (`_cell_script`)."""
    with open(path, encoding="utf-8") as f:
        cells = json.load(f)["cells"]
    parts = []
    for cell in cells:
        if cell.get("cell_type") == "code":
            source = cell["source"]
            parts.append(_cell_script("".join(source) if isinstance(source, list) else source))
    return "\n\n".join(parts) + "\n"
