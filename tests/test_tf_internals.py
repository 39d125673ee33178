"""The seam (`tpu_estimator_compat.tf_internals`): every private TensorFlow symbol it uses
exists in the installed TensorFlow, and each says what public behaviour it provides."""
import importlib
import pkgutil

import pytest

from tpu_estimator_compat import tf_internals
from tpu_estimator_compat.tf_internals import _symbols

_SEAM_MODULES = [importlib.import_module(f"{tf_internals.__name__}.{info.name}")
                 for info in pkgutil.iter_modules(tf_internals.__path__)
                 if not info.name.startswith("_")]


def test_every_seam_module_lists_its_symbols():
    assert len(_SEAM_MODULES) >= 6
    for module in _SEAM_MODULES:
        assert module.SYMBOLS, module.__name__
        assert set(module.SYMBOLS) <= set(_symbols.LEDGER)


@pytest.mark.parametrize("symbol", _symbols.LEDGER, ids=lambda symbol: symbol.name)
def test_private_symbol_exists_in_the_installed_tensorflow(symbol):
    try:
        symbol.check()
    except (AttributeError, ImportError) as e:
        pytest.fail(f"TensorFlow no longer has {symbol.name} (checked on TF "
                    f"{symbol.checked_on}), which gives: {symbol.provides}. {e}")
    assert symbol.provides and symbol.checked_on


def test_a_missing_symbol_is_named():
    gone = _symbols.Symbol("tensorflow.python.framework.ops", "Graph._no_such_attribute",
                           "nothing", per_instance=True)
    with pytest.raises(AttributeError, match="ops.Graph._no_such_attribute"):
        gone.check()
    with pytest.raises(AttributeError, match="_no_such_function"):
        _symbols.Symbol("tensorflow.python.framework.ops", "_no_such_function", "x").check()
