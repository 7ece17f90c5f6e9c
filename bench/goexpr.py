"""The subset of Go that gitleaks-style rule files build their test examples with."""

from __future__ import annotations

import ast
import random
import re
from collections.abc import Callable
from dataclasses import dataclass, field

from examples import Unknown, entropy, generate

_TOKEN = re.compile(
    r"""
    (?P<skip>[ \t\r]+|//[^\n]*|/\*.*?\*/)
  | (?P<nl>\n)
  | (?P<raw>`[^`]*`)
  | (?P<str>"(?:\\.|[^"\\\n])*")
  | (?P<rune>'(?:\\.|[^'\\\n])')
  | (?P<num>\d+(?:\.\d+)?)
  | (?P<name>[A-Za-z_][\w.]*)
  | (?P<op>:=|\.\.\.|\[\]|[-+(){},;=:&*\[\]<>!|./%])
""",
    re.VERBOSE | re.DOTALL,
)
Value = str | int | float | list[str] | None

# gitleaks' GenerateSampleSecrets: one sample per way configs and code assign a token.
SAMPLE_FORMS = (
    '{i}Token="{s}"',
    '{i}Token = "{s}"',
    "{i}Token={s}",
    "{i}Token = {s}",
    '{\n    "{i}_token": "{s}"\n}',
    '{"config.ini": "{I}_TOKEN={s}\\nBACKUP_ENABLED=true"}',
    "<{i}Token>\n    {s}\n</{i}Token>",
    "{i}_token: {s}",
    "{i}_token: '{s}'",
    '{i}_token: "{s}"',
    'string {i}Token = "{s}";',
    'var {i}Token string = "{s}"',
    '{i}Token := "{s}"',
    "{i}Token := `{s}`",
    'String {i}Token = "{s}";',
    'var {i}Token = "{s}"',
    '${i}Token .= "{s}"',
    "{i}Token = '{s}'",
    '{i}Token = "{s}"',
    'System.setProperty("{I}_TOKEN", "{s}")',
    '  "{i}Token" => "{s}"',
    '{i}_TOKEN = "{s}"',
    '{i}_TOKEN := "{s}"',
    '{i}_TOKEN ::= "{s}"',
    '{i}_TOKEN :::= "{s}"',
    '{i}_TOKEN ?= "{s}"',
)
SIZED = {
    "Numeric": "[0-9]{%s}",
    "Hex": "[a-f0-9]{%s}",
    "AlphaNumeric": "[a-z0-9]{%s}",
    "AlphaNumericExtendedShort": "[a-z0-9_-]{%s}",
    "AlphaNumericExtended": "[a-z0-9=_\\-]{%s}",
    "AlphaNumericExtendedLong": "[a-z0-9\\/=_\\+\\-]{%s}",
}


@dataclass
class Rule:
    """What one rule function declares: its id, the secret regex, the examples."""

    rule_id: str = ""
    regex: str = ""
    tps: list[str] = field(default_factory=list)
    fps: list[str] = field(default_factory=list)
    cases: list[tuple[str, bool]] = field(default_factory=list)  # trufflehog: input, wanted
    skipped: int = 0
    reported: bool = True  # False: `SkipReport: true`, a component another rule requires


def tokens(src: str) -> list[tuple[str, str]]:
    out, pos = [], 0
    while pos < len(src):
        m = _TOKEN.match(src, pos)
        if not m:
            out.append(("op", src[pos]))
            pos += 1
            continue
        pos = m.end()
        kind = m.lastgroup or "skip"
        if kind != "skip":
            out.append((kind, m.group()))
    return out


def _semi_generic(a: list[Value]) -> str:
    """A rule's identifiers, an assignment, then its secret (the only capturing group), the
    way gitleaks' utils.GenerateSemiGenericRegex arranges them."""
    names = "|".join(re.escape(str(n)) for n in (a[0] if isinstance(a[0], list) else [a[0]]))
    secret = f"(?i:{a[1]})" if len(a) > 2 and a[2] is True else str(a[1])
    return (
        rf"(?i:{names})(?:[ \t\w.-]{{0,20}})[\s'\"]{{0,3}}"
        rf"(?:=|>|:{{1,3}}=|\|\||:|=>|\?=|,)[\x60'\"\s=]{{0,5}}({secret})"
    )


class Evaluator:
    """Evaluates one function body's assignments, then its Validate(r, tps, fps) call."""

    def __init__(self, toks: list[tuple[str, str]], rng: random.Random):
        self.toks, self.i, self.rng = toks, 0, rng
        self.env: dict[str, Value] = {}
        self.skipped = 0
        self.funcs: dict[str, Callable[[list[Value]], Value]] = {
            "secrets.NewSecret": lambda a: generate(str(a[0]), rng),
            "secrets.NewSecretWithEntropy": self._with_entropy,
            "utils.GenerateSampleSecrets": lambda a: [
                f.replace("{i}", str(a[0]))
                .replace("{I}", str(a[0]).upper())
                .replace("{s}", str(a[1]))
                for f in SAMPLE_FORMS
            ],
            "utils.GenerateSampleSecret": lambda a: f'{a[0]}_api_token = "{a[1]}"',
            "utils.Hex8_4_4_4_12": lambda a: (
                "[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}"
            ),
            "strings.Repeat": lambda a: str(a[0]) * int(a[1]),  # type: ignore[arg-type]
            "strings.ToUpper": lambda a: str(a[0]).upper(),
            "strings.ToLower": lambda a: str(a[0]).lower(),
            "strings.Join": lambda a: str(a[1]).join(a[0]),  # type: ignore[arg-type]
            "fmt.Sprintf": self._sprintf,
            "append": self._append,
            "utils.GenerateUniqueTokenRegex": lambda a: f"({a[0]})",
            "utils.GenerateSemiGenericRegex": _semi_generic,
            "regexp.MustCompile": lambda a: str(a[0]),
        }
        for name, form in SIZED.items():
            self.funcs[f"utils.{name}"] = lambda a, form=form: form % a[0]

    def _with_entropy(self, a: list[Value]) -> str:
        best = ""
        for _ in range(20):
            best = generate(str(a[0]), self.rng)
            if entropy(best) >= float(a[1]):  # type: ignore[arg-type]
                break
        return best

    def _sprintf(self, a: list[Value]) -> str:
        args = iter(a[1:])
        return re.sub(r"%[sdvq]", lambda m: str(next(args, "")), str(a[0]))

    def _append(self, a: list[Value]) -> list[str]:
        base = list(a[0] or [])  # type: ignore[arg-type]
        for v in a[1:]:
            base += v if isinstance(v, list) else [str(v)]
        return base

    def peek(self) -> tuple[str, str]:
        return self.toks[self.i] if self.i < len(self.toks) else ("eof", "")

    def take(self, value: str | None = None) -> tuple[str, str]:
        tok = self.peek()
        if value is not None and tok[1] != value:
            raise Unknown(f"expected {value!r}, got {tok[1]!r}")
        self.i += 1
        return tok

    def skip_nl(self) -> None:
        while self.peek()[0] == "nl":
            self.i += 1

    def expr(self) -> Value:
        value = self.term()
        while self.peek()[1] == "+":
            self.take()
            self.skip_nl()
            right = self.term()
            if not isinstance(value, str) or not isinstance(right, str):
                raise Unknown("+ of non-strings")
            value += right
        return value

    def term(self) -> Value:
        kind, text = self.take()
        if kind == "raw":
            return text[1:-1]
        if kind in ("str", "rune"):
            return ast.literal_eval(text)
        if kind == "num":
            return float(text) if "." in text else int(text)
        if text == "[]":
            self.take("string")
            return self.items()
        if text == "(":
            value = self.expr()
            self.take(")")
            return value
        if kind != "name":
            raise Unknown(f"unexpected {text!r}")
        if text == "nil":
            return None
        if text in ("true", "false") and self.peek()[1] != "(":
            return text == "true"  # the flag arguments of utils.Generate*Regex
        if self.peek()[1] == "(":
            return self.call(text)
        if text in self.env:
            return self.env[text]
        raise Unknown(f"unknown name {text}")

    def items(self) -> list[str]:
        """`{a, b, c}` of a []string, skipping elements it cannot evaluate."""
        self.take("{")
        out: list[str] = []
        while True:
            self.skip_nl()
            if self.peek()[1] == "}":
                self.take()
                return out
            start = self.i
            try:
                v = self.expr()
                out += v if isinstance(v, list) else [str(v)]
            except (Unknown, IndexError, TypeError, ValueError, SyntaxError):
                self.skipped += 1
                self.i = start
                self.skip_balanced({",", "}"})
            if self.peek()[1] == ",":
                self.take()

    def call(self, name: str) -> Value:
        self.take("(")
        args: list[Value] = []
        while True:
            self.skip_nl()
            if self.peek()[1] == ")":
                self.take()
                break
            args.append(self.expr())
            if self.peek()[1] == "...":
                self.take()
            self.skip_nl()
            if self.peek()[1] == ",":
                self.take()
        fn = self.funcs.get(name)
        if fn is None:
            raise Unknown(f"unknown function {name}")
        return fn(args)

    def skip_balanced(self, stops: set[str]) -> None:
        depth = 0
        while self.i < len(self.toks):
            text = self.peek()[1]
            if depth == 0 and text in stops:
                return
            depth += text in "({[" or text == "[]"
            depth -= text in ")}]"
            if depth < 0:
                return
            self.i += 1

    def run(self) -> Rule:
        rule = Rule()
        while self.i < len(self.toks):
            kind, text = self.take()
            nxt = self.peek()[1]
            if kind == "name" and text in ("RuleID", "Regex") and nxt == ":":
                self.take()
                rule = self._field(rule, text)
            elif kind == "name" and text == "SkipReport" and nxt == ":":
                self.take()
                rule.reported = self.peek()[1] != "true"
            elif kind == "name" and text in ("input", "want") and nxt == ":":
                self.take()
                self._case(rule, text)
            elif kind == "name" and nxt in (":=", "="):
                self.take()
                start = self.i
                try:
                    self.env[text] = self.expr()
                except (Unknown, IndexError, TypeError, ValueError, SyntaxError):
                    self.i = start  # read on: a struct's fields (RuleID:...) are inside
                    self.env.pop(text, None)
            elif text in ("utils.Validate", "utils.ValidateWithPaths") and nxt == "(":
                self._validate(rule)
        rule.skipped = self.skipped
        return rule

    def _case(self, rule: Rule, name: str) -> None:
        start = self.i
        try:
            value = self.expr()
        except (Unknown, IndexError, TypeError, ValueError, SyntaxError):
            self.i = start
            if name == "input":
                self.skipped += 1
                self._input: str | None = None
            return
        if name == "input":
            self._input = str(value)
        elif getattr(self, "_input", None) is not None:
            rule.cases.append((str(self._input), bool(value)))
            self._input = None

    def _field(self, rule: Rule, name: str) -> Rule:
        start = self.i
        try:
            value = self.expr()
        except (Unknown, IndexError, TypeError, ValueError, SyntaxError):
            self.i = start
            return rule
        if name == "RuleID":
            rule.rule_id = str(value)
        else:
            rule.regex = str(value)
        return rule

    def _validate(self, rule: Rule) -> None:
        self.take("(")
        self.take()  # r
        self.take(",")
        for target in (rule.tps, rule.fps):
            self.skip_nl()
            start = self.i
            try:
                value = self.expr()
            except (Unknown, IndexError, TypeError, ValueError, SyntaxError):
                self.skipped += 1
                self.i = start
                self.skip_balanced({",", ")"})
                value = None
            target += value if isinstance(value, list) else []
            if self.peek()[1] == ",":
                self.take()


def rules(src: str, rng: random.Random) -> list[Rule]:
    """Every `func X() *config.Rule` of a rule file, evaluated."""
    out = []
    for body in re.split(r"\nfunc ", src)[1:]:
        if "config.Rule" not in body.split("\n", 1)[0]:
            continue
        rule = Evaluator(tokens(body), rng).run()
        if rule.rule_id:
            out.append(rule)
    return out
