"""The ledger of TensorFlow's private symbols the seam uses.

Each seam module lists its symbols with `uses(...)`: the private symbol, the public behaviour
it provides, the TensorFlow versions it was checked on. `tests/test_tf_internals.py` checks
that every listed symbol exists in the installed TensorFlow and fails naming the one that
does not, so a TensorFlow upgrade shows at once which behaviour it broke.
"""
import dataclasses
import importlib
import inspect

CHECKED_ON = "2.21"
LEDGER = []


@dataclasses.dataclass(frozen=True)
class Symbol:
    """`attribute` (a dotted path, '' for the module itself) of module `module`.

    `provides`: the public behaviour it gives; `checked_on`: the TensorFlow versions it was
    checked on. `per_instance`: the attribute ('Class.attr') is set by the class's own code
    (`self.attr = ...`), not on the class: its existence is checked in that code.
    """
    module: str
    attribute: str
    provides: str
    checked_on: str = CHECKED_ON
    per_instance: bool = False

    @property
    def name(self):
        return f"{self.module}.{self.attribute}" if self.attribute else self.module

    def check(self):
        """Raises AttributeError (or ImportError) naming the symbol if it is gone."""
        value = importlib.import_module(self.module)
        parts = self.attribute.split(".") if self.attribute else []
        if self.per_instance:
            *parts, attribute = parts
        for part in parts:
            if not hasattr(value, part):
                raise AttributeError(f"{self.name}: {part!r} is gone")
            value = getattr(value, part)
        if self.per_instance and f"self.{attribute} =" not in inspect.getsource(value):
            raise AttributeError(f"{self.name}: {value.__name__} no longer sets {attribute!r}")


def uses(*symbols):
    """Records the `Symbol`s a seam module uses; returns them."""
    LEDGER.extend(symbols)
    return symbols
