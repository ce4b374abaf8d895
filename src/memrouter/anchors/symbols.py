"""The definitions of a source file, found with tree-sitter: ``{dotted name: (first line, last line, digest)}``.

One query per language finds every definition in C; a pass over them in
source order gives each its dotted name from the definitions around it
(``Invoice.total``, ``outer.inner``; Go methods take their receiver's type,
Rust ``impl`` blocks the implemented type). A definition's span includes
what is written just before it and belongs to it: Python decorators, the
``export`` and ``const`` around a JavaScript function, Rust attributes,
TypeScript decorators. Definitions that share a name (overloads, a property's
getter and setter, both sides of an ``#if``) are one: the lowest first
line, the highest last line, one digest over all their texts.

The digest is BLAKE2b over the text with trailing spaces, blank lines and
the common indentation taken away, and nothing else: a method moved into a
class keeps its digest, but a line moved out of a Python block changes it
(dropping all whitespace would call such a change fresh).

tree-sitter and the grammars are imported only here, on the first parse
(``memrouter verify``, never a search). A language whose grammar cannot be
imported is reported by ``Parsers.missing``; its files are checked at file level.
"""

from __future__ import annotations

import hashlib
import importlib
import re
from dataclasses import dataclass
from pathlib import PurePosixPath
from typing import Any

__all__ = ["EXTENSIONS", "GRAMMARS", "Definition", "Parsers", "digest", "language_for"]

# language -> (module of its grammar wheel, the function giving the language)
GRAMMARS: dict[str, tuple[str, str]] = {
    "python": ("tree_sitter_python", "language"),
    "typescript": ("tree_sitter_typescript", "language_typescript"),
    "tsx": ("tree_sitter_typescript", "language_tsx"),
    "javascript": ("tree_sitter_javascript", "language"),
    "go": ("tree_sitter_go", "language"),
    "rust": ("tree_sitter_rust", "language"),
    "java": ("tree_sitter_java", "language"),
    "csharp": ("tree_sitter_c_sharp", "language"),
    "bash": ("tree_sitter_bash", "language"),
    "powershell": ("tree_sitter_pwsh", "language"),
}
# Source files by suffix. A suffix mapped to None is code we have no grammar for: checked at file level, and said so.
EXTENSIONS: dict[str, str | None] = {
    ".py": "python", ".pyi": "python", ".ts": "typescript", ".mts": "typescript", ".cts": "typescript",
    ".tsx": "tsx", ".js": "javascript", ".mjs": "javascript", ".cjs": "javascript", ".jsx": "javascript",
    ".go": "go", ".rs": "rust", ".java": "java", ".cs": "csharp", ".sh": "bash", ".bash": "bash",
    ".ps1": "powershell", ".psm1": "powershell",
    ".c": None, ".h": None, ".cc": None, ".cpp": None, ".hpp": None, ".kt": None, ".kts": None, ".rb": None,
    ".php": None, ".swift": None, ".scala": None, ".lua": None, ".dart": None, ".ex": None, ".exs": None,
    ".m": None, ".zig": None, ".sql": None, ".vue": None, ".svelte": None,
}  # fmt: skip

_SCRIPTS = {
    "python": "python",
    "python3": "python",
    "bash": "bash",
    "sh": "bash",
    "node": "javascript",
    "pwsh": "powershell",
}


def language_for(path: str, head: bytes = b"") -> str | None:
    """The language of ``path`` by its suffix (or its ``#!`` line, from ``head``); None when it is no source
    file memrouter knows. ``""`` for source code without a grammar here (see ``EXTENSIONS``)."""
    name = path[path.rfind("/") + 1 :]
    dot = name.rfind(".")
    suffix = name[dot:].lower() if dot > 0 else ""
    if suffix in EXTENSIONS:
        return EXTENSIONS[suffix] or ""
    if not suffix and head.startswith(b"#!"):
        line = head.split(b"\n", 1)[0].decode("ascii", "replace").split()
        program = PurePosixPath(line[-1] if line and line[0].endswith("env") else (line[0][2:] if line else "")).name
        return _SCRIPTS.get(program.rstrip("0123456789.") or program) if program else None
    return None


@dataclass(frozen=True, slots=True)
class Definition:
    """Where a definition is: 1-based lines (first and last) and the byte ranges of its text (several when
    definitions sharing its name were merged). ``digest_in`` gives its text's digest, computed when asked."""

    first: int
    last: int
    ranges: tuple[tuple[int, int], ...]

    def text_in(self, source: bytes) -> bytes:
        """Its text in ``source`` (the blob it was found in)."""
        return b"\n".join(source[start:end] for start, end in self.ranges)

    def digest_in(self, source: bytes) -> str:
        """The digest of its text in ``source`` (see ``digest``)."""
        return digest(self.text_in(source))


def digest(text: bytes) -> str:
    """The digest of a definition's text (see the module docstring)."""
    lines = [line.rstrip() for line in text.expandtabs(4).splitlines()]
    lines = [line for line in lines if line]
    rest = lines[1:]  # the first line starts where the definition does: its indentation is not in the text
    cut = min((len(line) - len(line.lstrip()) for line in rest), default=0)
    joined = b"\n".join([*lines[:1], *(line[cut:] for line in rest)])
    return hashlib.blake2b(joined, digest_size=8).hexdigest()


_JS_COMMON = """
(function_declaration name: (_) @name) @def
(generator_function_declaration name: (_) @name) @def
(class_declaration name: (_) @name) @def
(method_definition name: (_) @name) @def
(variable_declarator name: (identifier) @name) @def
(pair key: (property_identifier) @name value: [(arrow_function) (function_expression)]) @def
"""
QUERIES: dict[str, str] = {
    "python": """
(function_definition name: (identifier) @name) @def
(class_definition name: (identifier) @name) @def
(module (expression_statement (assignment left: (identifier) @name)) @def)
(class_definition body: (block (expression_statement (assignment left: (identifier) @name)) @def))
""",
    "javascript": _JS_COMMON
    + """
(field_definition property: (_) @name value: [(arrow_function) (function_expression)]) @def
""",
    "typescript": _JS_COMMON
    + """
(function_signature name: (_) @name) @def
(abstract_class_declaration name: (_) @name) @def
(interface_declaration name: (_) @name) @def
(type_alias_declaration name: (_) @name) @def
(enum_declaration name: (_) @name) @def
(internal_module name: (_) @name) @def
(method_signature name: (_) @name) @def
(abstract_method_signature name: (_) @name) @def
(public_field_definition name: (_) @name value: [(arrow_function) (function_expression)]) @def
""",
    "go": """
(function_declaration name: (identifier) @name) @def
(method_declaration
  receiver: (parameter_list (parameter_declaration type: [
    (type_identifier) @receiver
    (pointer_type (type_identifier) @receiver)
    (generic_type type: (type_identifier) @receiver)
    (pointer_type (generic_type type: (type_identifier) @receiver))]))
  name: (field_identifier) @name) @def
(type_spec name: (type_identifier) @name) @def
(source_file (const_declaration (const_spec name: (identifier) @name) @def))
(source_file (var_declaration (var_spec name: (identifier) @name) @def))
(source_file (var_declaration (var_spec_list (var_spec name: (identifier) @name) @def)))
""",
    "rust": """
(function_item name: (identifier) @name) @def
(function_signature_item name: (identifier) @name) @def
(struct_item name: (type_identifier) @name) @def
(enum_item name: (type_identifier) @name) @def
(union_item name: (type_identifier) @name) @def
(trait_item name: (type_identifier) @name) @def
(type_item name: (type_identifier) @name) @def
(const_item name: (identifier) @name) @def
(static_item name: (identifier) @name) @def
(mod_item name: (identifier) @name) @def
(macro_definition name: (identifier) @name) @def
(impl_item type: (_) @name) @scope
""",
    "java": """
(class_declaration name: (identifier) @name) @def
(interface_declaration name: (identifier) @name) @def
(enum_declaration name: (identifier) @name) @def
(record_declaration name: (identifier) @name) @def
(annotation_type_declaration name: (identifier) @name) @def
(method_declaration name: (identifier) @name) @def
(constructor_declaration name: (identifier) @name) @def
(field_declaration declarator: (variable_declarator name: (identifier) @name)) @def
""",
    "csharp": """
(class_declaration name: (identifier) @name) @def
(struct_declaration name: (identifier) @name) @def
(interface_declaration name: (identifier) @name) @def
(enum_declaration name: (identifier) @name) @def
(record_declaration name: (identifier) @name) @def
(delegate_declaration name: (identifier) @name) @def
(method_declaration name: (identifier) @name) @def
(constructor_declaration name: (identifier) @name) @def
(property_declaration name: (identifier) @name) @def
(local_function_statement name: (identifier) @name) @def
(field_declaration (variable_declaration (variable_declarator name: (identifier) @name))) @def
""",
    "bash": "(function_definition name: (word) @name) @def",
    "powershell": """
(function_statement (function_name) @name) @def
(class_statement . (simple_name) @name) @def
(enum_statement . (simple_name) @name) @def
(class_method_definition (simple_name) @name) @def
""",
}
QUERIES["tsx"] = QUERIES["typescript"]
_FLAT = frozenset({"bash"})  # a shell function defined inside another is global all the same
_JS_FAMILY = frozenset({"javascript", "typescript", "tsx"})
_FUNCTION_VALUES = frozenset({"arrow_function", "function_expression", "function", "generator_function", "class"})
_BEFORE = frozenset({"attribute_item", "decorator"})  # written just before a definition, as its siblings
_CS_DIRECTIVE = re.compile(rb"(?m)^[ \t]*#[ \t]*(?:if|elif|else|endif|region|endregion)\b[^\n]*")
_PS_SCOPE = re.compile(r"^(?:global|script|local|private):", re.IGNORECASE)


class Parsers:
    """The parsers and queries of the languages used so far, loaded on first use; ``missing`` says which
    grammars could not be loaded and why."""

    def __init__(self) -> None:
        self._loaded: dict[str, tuple[Any, Any]] = {}
        self.missing: dict[str, str] = {}

    def available(self, language: str) -> bool:
        """Whether ``language``'s grammar loads (loading it if needed)."""
        return self._load(language) is not None

    def _load(self, language: str) -> tuple[Any, Any] | None:
        if language in self._loaded:
            return self._loaded[language]
        if language in self.missing or language not in GRAMMARS:
            self.missing.setdefault(language, f"no grammar for {language or 'this language'} in this install")
            return None
        module, function = GRAMMARS[language]
        try:
            import tree_sitter  # lazy: only verifying anchors parses code

            grammar = tree_sitter.Language(getattr(importlib.import_module(module), function)())
            loaded = (
                tree_sitter.Parser(grammar),
                tree_sitter.QueryCursor(tree_sitter.Query(grammar, QUERIES[language])),
            )
        except (
            ImportError,
            AttributeError,
            ValueError,
            TypeError,
            OSError,
        ) as exc:  # a wheel missing or built for another ABI
            self.missing[language] = f"the {language} grammar ({module}) cannot be loaded: {exc}"
            return None
        self._loaded[language] = loaded
        return loaded

    def definitions(self, source: bytes, language: str) -> dict[str, Definition] | None:
        """The definitions in ``source`` by dotted name; None when ``language`` has no grammar (see ``missing``)."""
        loaded = self._load(language)
        if loaded is None:
            return None
        parser, cursor = loaded
        if language == "csharp":  # #if/#else lines split statements: blanked, offsets kept
            source = _CS_DIRECTIVE.sub(lambda found: b" " * len(found.group(0)), source)
        tree = parser.parse(source)
        found: list[tuple[int, int, str, Any, bool]] = []
        for _, captures in cursor.matches(tree.root_node):
            scope = "scope" in captures
            node = (captures.get("scope") if scope else captures.get("def") or [None])[0]
            names = captures.get("name")
            if node is None or not names:
                continue
            name = _text(names[0])
            if "receiver" in captures:
                name = f"{_text(captures['receiver'][0])}.{name}"
            if scope:
                name = _type_name(name)
            elif not _kept(language, node):
                continue
            if language == "powershell":
                name = _PS_SCOPE.sub("", name)
            found.append((node.start_byte, node.end_byte, name, node, scope))
        found.sort(key=lambda item: (item[0], -item[1]))
        merged: dict[str, tuple[int, int, list[tuple[int, int]]]] = {}
        open_scopes: list[tuple[int, int, str]] = []  # (start byte, end byte, dotted name)
        for start, end, name, node, scope in found:
            # Close what ended, and a definition with this very range (`int MAX, MIN;` is one node named twice).
            while open_scopes and (open_scopes[-1][1] <= start or open_scopes[-1][:2] == (start, end)):
                open_scopes.pop()
            dotted = name if language in _FLAT or not open_scopes else f"{open_scopes[-1][2]}.{name}"
            open_scopes.append((start, end, dotted))
            if scope:
                continue
            first, last = _span(language, node)
            span = (first.start_byte, last.end_byte)
            low, high = first.start_point[0] + 1, last.end_point[0] + 1
            if dotted in merged:
                old_low, old_high, spans = merged[dotted]
                merged[dotted] = (min(low, old_low), max(high, old_high), [*spans, span])
            else:
                merged[dotted] = (low, high, [span])
        return {name: Definition(low, high, tuple(spans)) for name, (low, high, spans) in merged.items()}


def _text(node: Any) -> str:
    return bytes(node.text or b"").decode("utf-8", "replace")


def _type_name(written: str) -> str:
    """The type a Rust ``impl`` is for: ``impl<'a, R> Trait for &'a mut Reader<R>`` gives ``Reader``."""
    text = re.sub(r"^&\s*(?:'\w+\s+)?(?:mut\s+)?", "", written.strip())
    text = text.split("<", 1)[0].split("::")[-1]
    return re.split(r"[\s\[(]", text, maxsplit=1)[0] or written


def _kept(language: str, node: Any) -> bool:
    """JavaScript variables count when they hold a function (at any depth) or sit at module level."""
    if language not in _JS_FAMILY or node.type != "variable_declarator":
        return True
    value = node.child_by_field_name("value")
    if value is not None and value.type in _FUNCTION_VALUES:
        return True
    statement = node.parent
    holder = statement.parent if statement is not None else None
    if holder is not None and holder.type == "export_statement":
        holder = holder.parent
    return holder is not None and holder.type == "program"


def _span(language: str, node: Any) -> tuple[Any, Any]:
    """The first and last node of a definition's text: decorators, ``export`` and attributes included."""
    parent = node.parent
    if language == "python" and parent is not None and parent.type == "decorated_definition":
        node = parent
    elif language in _JS_FAMILY:
        if node.type == "variable_declarator" and parent is not None and parent.type in (
            "lexical_declaration", "variable_declaration",
        ):  # fmt: skip
            node, parent = parent, parent.parent
        if parent is not None and parent.type == "export_statement":
            node = parent
    first = node
    before = first.prev_named_sibling
    while before is not None and before.type in _BEFORE and before.end_point[0] >= first.start_point[0] - 1:
        first, before = before, before.prev_named_sibling
    return first, node
