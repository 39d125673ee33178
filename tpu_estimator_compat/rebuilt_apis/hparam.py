"""`tf.contrib.training.HParams`: named, typed hyperparameters, overridable from strings.

No maintained library serves contrib's `HParams` with its semantics, so it is written here:
values typed by their first value (a list's by its first element), set and parsed with
contrib's casting rules (an int may become a float, never the reverse; no number from a
string or a bool, no string from a number), `parse('a=1,b=[1,2],c=x')`, `parse_json`,
`override_from_dict`, `to_json`, `values`, `get`, model structure. Not provided: the
`hparam_def` protocol buffer and indexed assignment in `parse` (`a[1]=2`).
"""
import json
import numbers
import re

_ASSIGNMENT = re.compile(
    r"\s*(?P<name>[a-zA-Z][\w.]*)\s*=\s*(?:\[(?P<items>[^\]]*)\]|(?P<value>[^,\[]*))\s*(?:,|$)")


def _cast(name, param_type, value):
    """`value` as `param_type` under contrib's rules, else ValueError."""
    fail = f"Could not cast hparam '{name}' of type '{param_type}' from value {value!r}"
    if issubclass(param_type, type(None)):
        return value
    if issubclass(param_type, (str, bytes)) and not isinstance(value, (str, bytes)):
        raise ValueError(fail)
    if issubclass(param_type, bool) != isinstance(value, bool):
        raise ValueError(fail)
    if issubclass(param_type, numbers.Integral) and not isinstance(value, numbers.Integral):
        raise ValueError(fail)
    if issubclass(param_type, numbers.Number) and not isinstance(value, numbers.Number):
        raise ValueError(fail)
    return param_type(value)


def _parse_text(name, param_type, text, values):
    """One value of a `parse` string, read as `param_type`."""
    text = text.strip()
    try:
        if issubclass(param_type, bool):
            lowered = text.lower()
            if lowered not in ("true", "false", "1", "0"):
                raise ValueError(text)
            return lowered in ("true", "1")
        if issubclass(param_type, (str, bytes, type(None))):
            return text
        return param_type(text)
    except ValueError:
        raise ValueError(f"Could not parse hparam '{name}' of type '{param_type.__name__}' "
                         f"with value '{text}' in {values}") from None


def parse_values(values, type_map, ignore_unknown=False):
    """`{name: value}` from a string of `name=value` / `name=[v1,v2]` pairs.

    Raises:
      ValueError: malformed text, an unknown name (unless `ignore_unknown`), a name given twice
        or a value that does not parse as its type.
    """
    result, position = {}, 0
    while position < len(values):
        match = _ASSIGNMENT.match(values, position)
        if not match or match.end() == position:
            raise ValueError(f"Malformed hyperparameter value: {values[position:]}")
        position = match.end()
        name = match.group("name")
        if name not in type_map:
            if ignore_unknown:
                continue
            raise ValueError(f"Unknown hyperparameter type for {name}")
        if name in result:
            raise ValueError(f"Multiple assignments to variable '{name}' in {values}")
        param_type = type_map[name]
        if match.group("items") is not None:
            items = [item for item in match.group("items").split(",") if item.strip()]
            result[name] = [_parse_text(name, param_type, item, values) for item in items]
        else:
            result[name] = _parse_text(name, param_type, match.group("value"), values)
    return result


class HParams:
    """A set of hyperparameters, each an attribute: `HParams(learning_rate=0.1).learning_rate`.

    Args:
      hparam_def: not supported (contrib's protocol buffer); must be None.
      model_structure: any object, returned by `get_model_structure()`.
      **kwargs: the hyperparameters and their initial values.
    """

    _HAS_DYNAMIC_ATTRIBUTES = True  # for pytype, as contrib's

    def __init__(self, hparam_def=None, model_structure=None, **kwargs):
        if hparam_def is not None:
            raise NotImplementedError(
                "HParams(hparam_def=...): the HParamDef protocol buffer is not supported by "
                "tpu_estimator_compat; pass the values as keyword arguments.")
        self._hparam_types = {}
        self._model_structure = model_structure
        for name, value in kwargs.items():
            self.add_hparam(name, value)

    def add_hparam(self, name, value):
        """Adds hyperparameter `name`, typed by `value` (a list's type is its first item's).

        Raises:
          ValueError: `name` is already an attribute, or `value` is an empty list.
        """
        if getattr(self, name, None) is not None:
            raise ValueError(f"Hyperparameter name is reserved: {name}")
        if isinstance(value, (list, tuple)):
            if not value:
                raise ValueError(f"Multi-valued hyperparameters cannot be empty: {name}")
            self._hparam_types[name] = (type(value[0]), True)
        else:
            self._hparam_types[name] = (type(value), False)
        setattr(self, name, value)

    def set_hparam(self, name, value):
        """Sets an existing hyperparameter, cast to its type.

        Raises:
          KeyError: unknown `name`. ValueError: list given for a single value, or the reverse,
            or a value that cannot be cast.
        """
        param_type, is_list = self._hparam_types[name]
        if isinstance(value, list):
            if not is_list:
                raise ValueError(f"Must not pass a list for single-valued parameter: {name}")
            setattr(self, name, [_cast(name, param_type, item) for item in value])
        else:
            if is_list:
                raise ValueError(f"Must pass a list for multi-valued parameter: {name}.")
            setattr(self, name, _cast(name, param_type, value))

    def del_hparam(self, name):
        """Removes hyperparameter `name`, if present."""
        if hasattr(self, name):
            delattr(self, name)
            del self._hparam_types[name]

    def parse(self, values):
        """Overrides values from a string `'name=value,name2=[1,2]'`; returns self."""
        type_map = {name: param_type for name, (param_type, _) in self._hparam_types.items()}
        return self.override_from_dict(parse_values(values, type_map))

    def override_from_dict(self, values_dict):
        """Sets each `name: value` of the dict (see `set_hparam`); returns self."""
        for name, value in values_dict.items():
            self.set_hparam(name, value)
        return self

    def set_model_structure(self, model_structure):
        self._model_structure = model_structure

    def get_model_structure(self):
        return self._model_structure

    def to_json(self, indent=None, separators=None, sort_keys=False):
        """The values as a JSON object string (arguments as `json.dumps`')."""
        return json.dumps(self.values(), indent=indent, separators=separators,
                          sort_keys=sort_keys)

    def parse_json(self, values_json):
        """Overrides values from a JSON object string; returns self."""
        return self.override_from_dict(json.loads(values_json))

    def values(self):
        """A dict of every hyperparameter's name and value."""
        return {name: getattr(self, name) for name in self._hparam_types}

    def get(self, key, default=None):
        """The value of `key`, else `default` (whose type must suit `key`'s if both exist).

        Raises:
          ValueError: `key` exists and `default` is not None and does not cast to its type.
        """
        if key not in self._hparam_types:
            return default
        if default is not None:
            param_type, is_list = self._hparam_types[key]
            type_name = f"list<{param_type}>" if is_list else str(param_type)
            fail = f"Hparam '{key}' of type '{type_name}' is incompatible with default={default}"
            if is_list != isinstance(default, list):
                raise ValueError(fail)
            try:
                for item in default if is_list else [default]:
                    _cast(key, param_type, item)
            except ValueError as error:
                raise ValueError(f"{fail}. {error}") from None
        return getattr(self, key)

    def __contains__(self, key):
        return key in self._hparam_types

    def __str__(self):
        return str(sorted(self.values().items()))

    def __repr__(self):
        return f"{type(self).__name__}({self})"
