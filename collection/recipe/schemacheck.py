"""A JSON Schema compiled once into Python closures: a fast yes/no check (pure).

jsonschema stays the authority: it produces every refusal's details. But registrable
documents are the common case (recipe CI validates the same files again and again), and
jsonschema spends most of a registration building validator objects per keyword. This
module compiles the subset of 2020-12 keywords our schemas use into closures that only
answer "valid?"; registration asks jsonschema for errors only when the answer is no.

A keyword this compiler does not know is a compile error, never silently skipped, so the
check can only be as strict as the schema or refuse to exist. A property test compares it
with jsonschema on many documents (tests/test_schemacheck.py).
"""

from __future__ import annotations

import re
from typing import Any, Callable

Check = Callable[[Any], bool]

_ANNOTATIONS = {"$schema", "$id", "title", "description", "default", "examples", "$comment"}


class UnsupportedSchema(ValueError):
    pass


def _is_type(name: str) -> Check:
    if name == "object":
        return lambda v: isinstance(v, dict)
    if name == "array":
        return lambda v: isinstance(v, list)
    if name == "string":
        return lambda v: isinstance(v, str)
    if name == "boolean":
        return lambda v: isinstance(v, bool)
    if name == "null":
        return lambda v: v is None
    if name == "integer":
        return lambda v: (isinstance(v, int) and not isinstance(v, bool)) or (isinstance(v, float) and v.is_integer())
    if name == "number":
        return lambda v: isinstance(v, (int, float)) and not isinstance(v, bool)
    raise UnsupportedSchema(f"type {name!r}")


def _json_key(value: Any) -> Any:
    """A hashable key equal for JSON-equal values: 1 and 1.0 collide, true and 1 do not."""
    if isinstance(value, bool):
        return ("b", value)
    if isinstance(value, (int, float)):
        return ("n", int(value) if isinstance(value, float) and value.is_integer() else value)
    if isinstance(value, str):
        return ("s", value)
    if isinstance(value, list):
        return ("l", tuple(_json_key(item) for item in value))
    if isinstance(value, dict):
        return ("d", frozenset((key, _json_key(item)) for key, item in value.items()))
    return ("z", None)


def _number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def _all_of(checks: tuple[Check, ...]) -> Check:
    def all_of(v: Any) -> bool:
        for check in checks:
            if not check(v):
                return False
        return True
    return all_of


class Compiler:
    def __init__(self, root: dict[str, Any], resources: dict[str, dict[str, Any]] | None = None):
        self.root = root
        self.resources = resources or {}
        self._refs: dict[str, Check] = {}

    def compile(self) -> Check:
        return self._compile(self.root, self.root)

    def _resolve(self, ref: str, document: dict[str, Any]) -> tuple[dict[str, Any], dict[str, Any]]:
        target_doc = document
        if not ref.startswith("#"):
            name, _, fragment = ref.partition("#")
            target_doc = next((d for key, d in self.resources.items() if key.endswith(name)), None)
            if target_doc is None:
                raise UnsupportedSchema(f"$ref {ref!r}")
            ref = "#" + fragment
        node: Any = target_doc
        for part in [p for p in ref[1:].split("/") if p]:
            node = node[part.replace("~1", "/").replace("~0", "~")]
        return node, target_doc

    def _compile(self, schema: Any, document: dict[str, Any]) -> Check:
        if schema is True:
            return lambda v: True
        if schema is False:
            return lambda v: False
        checks: list[Check] = []
        fused, done = self._fused(schema, document)
        if fused is not None:
            checks.append(fused)
        for keyword, value in schema.items():
            if keyword in _ANNOTATIONS or keyword.startswith("x-") or keyword in ("$defs", "then", "else"):
                continue
            if keyword in done:
                continue
            checks.append(self._keyword(keyword, value, schema, document))
        if not checks:
            return lambda v: True
        if len(checks) == 1:
            return checks[0]
        return _all_of(tuple(checks))

    def _fused(self, schema: dict[str, Any], document: dict[str, Any]) -> tuple[Check | None, frozenset[str]]:
        """One closure for the commonest keyword sets, which would otherwise be one closure each
        under an allOf: a closed object (type object, properties, additionalProperties false,
        required) and a bounded string (type string, minLength, maxLength, pattern). It accepts
        exactly what those keywords accept together."""
        if schema.get("type") == "object" and schema.get("additionalProperties") is False \
                and isinstance(schema.get("properties"), dict) and not schema.get("patternProperties"):
            compiled = {name: self._compile(sub, document) for name, sub in schema["properties"].items()}
            required = tuple(schema.get("required", ()))

            def closed_object(v: Any) -> bool:
                if not isinstance(v, dict):
                    return False
                for name, item in v.items():
                    check = compiled.get(name)
                    if check is None or not check(item):
                        return False      # not a declared member, or an invalid one
                for name in required:
                    if name not in v:
                        return False
                return True
            return closed_object, frozenset({"type", "properties", "additionalProperties", "required"})
        if schema.get("type") == "string" and any(k in schema for k in ("minLength", "maxLength", "pattern")):
            low, high = schema.get("minLength", 0), schema.get("maxLength")
            search = re.compile(schema["pattern"]).search if "pattern" in schema else None

            def bounded_string(v: Any) -> bool:
                return isinstance(v, str) and len(v) >= low and (high is None or len(v) <= high) \
                    and (search is None or search(v) is not None)
            return bounded_string, frozenset({"type", "minLength", "maxLength", "pattern"})
        return None, frozenset()

    def _keyword(self, keyword: str, value: Any, schema: dict[str, Any], document: dict[str, Any]) -> Check:
        if keyword == "type":
            names = value if isinstance(value, list) else [value]
            tests = [_is_type(n) for n in names]
            if len(tests) == 1:
                return tests[0]
            return lambda v: any(t(v) for t in tests)
        if keyword == "$ref":
            key = f"{id(document)}{value}"
            if key not in self._refs:
                self._refs[key] = lambda v: True  # placeholder while compiling a recursive reference
                target, target_doc = self._resolve(value, document)
                self._refs[key] = self._compile(target, target_doc)
            refs = self._refs
            return lambda v: refs[key](v)
        if keyword == "properties":
            compiled = {name: self._compile(sub, document) for name, sub in value.items()}

            def properties(v: Any) -> bool:
                if isinstance(v, dict):
                    for name, item in v.items():
                        check = compiled.get(name)
                        if check is not None and not check(item):
                            return False
                return True
            return properties
        if keyword == "additionalProperties":
            known = set(schema.get("properties", {}))
            if schema.get("patternProperties"):
                raise UnsupportedSchema("patternProperties")
            sub = self._compile(value, document)
            return lambda v: not isinstance(v, dict) or all(sub(item) for k, item in v.items() if k not in known)
        if keyword == "propertyNames":
            sub = self._compile(value, document)
            return lambda v: not isinstance(v, dict) or all(sub(k) for k in v)
        if keyword == "required":
            names = tuple(value)
            return lambda v: not isinstance(v, dict) or all(n in v for n in names)
        if keyword in ("minProperties", "maxProperties"):
            bound = value
            if keyword == "minProperties":
                return lambda v: not isinstance(v, dict) or len(v) >= bound
            return lambda v: not isinstance(v, dict) or len(v) <= bound
        if keyword in ("enum", "const"):
            values = value if keyword == "enum" else [value]
            if all(isinstance(item, str) for item in values):
                strings = frozenset(values)  # only a string can equal a string in JSON
                return lambda v: isinstance(v, str) and v in strings
            allowed = {_json_key(item) for item in values}
            return lambda v: _json_key(v) in allowed
        if keyword == "minimum":
            return lambda v: not _number(v) or v >= value
        if keyword == "maximum":
            return lambda v: not _number(v) or v <= value
        if keyword == "minLength":
            return lambda v: not isinstance(v, str) or len(v) >= value
        if keyword == "maxLength":
            return lambda v: not isinstance(v, str) or len(v) <= value
        if keyword == "pattern":
            search = re.compile(value).search
            return lambda v: not isinstance(v, str) or search(v) is not None
        if keyword == "minItems":
            return lambda v: not isinstance(v, list) or len(v) >= value
        if keyword == "maxItems":
            return lambda v: not isinstance(v, list) or len(v) <= value
        if keyword == "uniqueItems":
            if not value:
                return lambda v: True
            return lambda v: not isinstance(v, list) or len({_json_key(i) for i in v}) == len(v)
        if keyword == "items":
            sub = self._compile(value, document)

            def items(v: Any) -> bool:
                if isinstance(v, list):
                    for item in v:
                        if not sub(item):
                            return False
                return True
            return items
        if keyword == "allOf":
            return _all_of(tuple(self._compile(s, document) for s in value))
        if keyword == "anyOf":
            subs = [self._compile(s, document) for s in value]
            return lambda v: any(s(v) for s in subs)
        if keyword == "oneOf":
            subs = [self._compile(s, document) for s in value]
            return lambda v: sum(1 for s in subs if s(v)) == 1
        if keyword == "if":
            condition = self._compile(value, document)
            then = self._compile(schema.get("then", True), document)
            otherwise = self._compile(schema.get("else", True), document)
            return lambda v: then(v) if condition(v) else otherwise(v)
        raise UnsupportedSchema(f"keyword {keyword!r}")


def compile_check(schema: dict[str, Any], resources: dict[str, dict[str, Any]] | None = None) -> Check:
    """A function answering whether a JSON value is valid against `schema`."""
    return Compiler(schema, resources).compile()
