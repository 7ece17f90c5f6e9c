"""A labelled corpus of secrets and look-alikes, built at run time.

No secret is written in the repository: every positive is made here from the format its
vendor documents, with random characters, inside text like what agents send (.env, YAML,
JSON, code, shell output, a Read tool's numbered lines, a tool result JSON-escaped inside
a string). Negatives are the families that trip secret scanners: lockfile integrity
strings, digests, UUIDs, git logs, trace ids, documented example keys, placeholders,
environment references, public keys, minified code, base64 images.
"""

from __future__ import annotations

import base64
import json
import random
import string
import uuid
import zlib
from collections.abc import Callable, Iterator
from dataclasses import dataclass

try:  # imported as screen.secrets_corpus by the tests, as secrets_corpus by bench/
    from screen import vendor_corpus, wallet_corpus
except ImportError:
    import vendor_corpus  # type: ignore[no-redef]
    import wallet_corpus  # type: ignore[no-redef]

B62 = string.digits + string.ascii_uppercase + string.ascii_lowercase
ALNUM = string.ascii_letters + string.digits
B64 = ALNUM + "+/"
B64URL = ALNUM + "-_"
HEX = "0123456789abcdef"


@dataclass(frozen=True)
class Secret:
    value: str


Part = str | Secret


@dataclass(frozen=True)
class Sample:
    name: str  # "<rule id>/<context>" or "neg/<family>"
    text: str
    spans: tuple[tuple[int, int], ...]  # where the secrets are; empty for a negative
    rule_id: str | None = None  # the detector expected to find them


class Gen:
    """Random bodies in the documented alphabets and lengths."""

    def __init__(self, seed: int):
        self.rng = random.Random(seed)

    def chars(self, alphabet: str, n: int) -> str:
        return "".join(self.rng.choice(alphabet) for _ in range(n))

    def hex(self, n: int) -> str:
        return self.chars(HEX, n)

    def b64bytes(self, n: int) -> str:
        return base64.b64encode(self.rng.randbytes(n)).decode()

    def password(self, n: int = 14) -> str:
        while True:
            pw = self.chars(ALNUM + "!#%^*+=", n)
            # `***` and `####` read as a mask (docs/secrets.md): a value holding one is not
            # asked about, which about one password in 20,000 of these would
            masked = "***" in pw or "####" in pw
            if any(c.isdigit() for c in pw) and any(c.isalpha() for c in pw) and not masked:
                return pw

    def passphrase(self, words: int = 4, sep: str = "-") -> str:
        """Made-up pronounceable words joined by `sep`, as diceware-style generators make
        them (no word list in the repo: syllables drawn at random)."""

        def word() -> str:
            return "".join(
                self.rng.choice("bcdfghjklmnprstvwz") + self.rng.choice("aeiou")
                for _ in range(self.rng.randint(3, 4))
            )

        return sep.join(word() for _ in range(words))

    def crc_token(self, prefix: str) -> str:
        body = self.chars(B62, 30)
        n, check = zlib.crc32(body.encode()), ""
        while n:
            n, r = divmod(n, 62)
            check = B62[r] + check
        return prefix + body + check.rjust(6, "0")

    def jwt(self, alg: str = "HS256", **claims: object) -> str:
        def enc(obj: object) -> str:
            return base64.urlsafe_b64encode(json.dumps(obj).encode()).decode().rstrip("=")

        payload = {
            "sub": str(self.rng.randrange(10**8)),
            "iat": 1700000000 + self.rng.randrange(10**7),
            "exp": 1800000000,
            **claims,
        }
        return f"{enc({'alg': alg, 'typ': 'JWT'})}.{enc(payload)}.{self.chars(B64URL, 43)}"

    def pem(self, label: str, nbytes: int = 900) -> str:
        body = self.b64bytes(nbytes)
        lines = [body[i : i + 64] for i in range(0, len(body), 64)]
        return "\n".join([f"-----BEGIN {label}-----", *lines, f"-----END {label}-----"])

    def uuid(self) -> str:
        return str(uuid.UUID(int=self.rng.getrandbits(128), version=4))


# -- contexts: how a secret sits in what an agent sends ----------------------------------


def assemble(parts: list[Part]) -> tuple[str, tuple[tuple[int, int], ...]]:
    text, spans = "", []
    for p in parts:
        if isinstance(p, Secret):
            spans.append((len(text), len(text) + len(p.value)))
            text += p.value
        else:
            text += p
    return text, tuple(spans)


def json_escaped(parts: list[Part]) -> list[Part]:
    """As a Codex-style tool result: the output JSON-encoded inside a JSON string."""

    def esc(s: str) -> str:
        return json.dumps(s)[1:-1]

    return [
        '{"output":"',
        *(Secret(esc(p.value)) if isinstance(p, Secret) else esc(p) for p in parts),
        '","metadata":{"exit_code":0}}',
    ]


def numbered(parts: list[Part]) -> list[Part]:
    """As Claude Code's Read tool shows a file: `     7→line`."""
    line = 1
    out: list[Part] = [f"{line:>6}→"]
    for p in parts:
        raw = p.value if isinstance(p, Secret) else p
        chunks = raw.split("\n")
        built = chunks[0]
        for chunk in chunks[1:]:
            line += 1
            built += f"\n{line:>6}→{chunk}"
        out.append(Secret(built) if isinstance(p, Secret) else built)
    return out


CONTEXTS: dict[str, Callable[[list[Part]], list[Part]]] = {
    "raw": lambda parts: parts,
    "json": json_escaped,
    "read": numbered,
}


def env_file(g: Gen, name: str, secret: Part | list[Part]) -> list[Part]:
    return _flatten(
        [
            f"NODE_ENV=production\nPORT={g.rng.randrange(3000, 9000)}\n"
            f"DATABASE_HOST=db.internal\n{name}=",
            secret,
            "\nLOG_LEVEL=info\n",
        ]
    )


def _flatten(parts: list[Part | list[Part]]) -> list[Part]:
    out: list[Part] = []
    for p in parts:
        out += _flatten(p) if isinstance(p, list) else [p]  # type: ignore[arg-type]
    return out


def key_hex(g: Gen, n: int) -> str:
    """`n` random bytes as `openssl -text` prints a key's component: 15 a line, indented."""
    cells = [f"{b:02x}" for b in g.rng.randbytes(n)]
    lines = [":".join(cells[i : i + 15]) for i in range(0, n, 15)]
    return ":\n".join("    " + line for line in lines)


def shell(cmd: str, *output: Part) -> list[Part]:
    return [f"$ {cmd}\n", *output, "\n$ "]


# -- positives, per detector --------------------------------------------------------------


def _specs(g: Gen) -> Iterator[tuple[str, str, list[Part]]]:
    """(rule id, label, parts) for every detector; each is expanded over contexts."""
    k = g.chars(B62.upper()[:36], 16)
    yield "aws.access-key-id", "env", env_file(g, "AWS_ACCESS_KEY_ID", Secret("AKIA" + k))
    yield (
        "aws.access-key-id",
        "credentials",
        [
            "[default]\naws_access_key_id = ",
            Secret("ASIA" + g.chars(B62.upper()[:36], 16)),
            "\nregion = eu-west-1\n",
        ],
    )
    yield (
        "aws.secret-access-key",
        "ini",
        [
            "[prod]\naws_access_key_id = AKIA"
            + g.chars(B62.upper()[:36], 16)
            + "\naws_secret_access_key = ",
            Secret(g.chars(B64, 40)),
            "\n",
        ],
    )
    yield (
        "aws.secret-access-key",
        "sts",
        shell(
            "aws sts assume-role --role-arn arn:aws:iam::123456789012:role/ci"
            " --role-session-name x",
            '{\n    "Credentials": {\n        "AccessKeyId": "ASIA'
            + g.chars(B62.upper()[:36], 16)
            + '",\n        "SecretAccessKey": "',
            Secret(g.chars(B64, 40)),
            '",\n        "Expiration": "2025-01-01T00:00:00Z"\n    }\n}',
        ),
    )
    yield (
        "google.api-key",
        "js",
        [
            'const firebaseConfig = {\n  apiKey: "',
            Secret("AIza" + g.chars(B64URL, 35)),
            '",\n  authDomain: "demo-app.firebaseapp.com",\n};\n',
        ],
    )
    yield (
        "google.api-key",
        "curl",
        shell(
            "history | tail -1",
            "  512  curl 'https://maps.googleapis.com/maps/api/geocode/json?address=Paris&key=",
            Secret("AIza" + g.chars(B64URL, 35)),
            "'",
        ),
    )
    yield (
        "google.oauth-client-secret",
        "json",
        [
            '{"web":{"client_id":"1234-abc.apps.googleusercontent.com","client_secret":"',
            Secret("GOCSPX-" + g.chars(B64URL, 28)),
            '","redirect_uris":["http://localhost"]}}',
        ],
    )
    yield (
        "google.oauth-access-token",
        "shell",
        shell("gcloud auth print-access-token", Secret("ya29." + g.chars(B64URL, 150))),
    )
    yield (
        "azure.storage-account-key",
        "conn",
        [
            "AZURE_STORAGE_CONNECTION_STRING=DefaultEndpointsProtocol=https;AccountName=acme;"
            "AccountKey=",
            Secret(g.b64bytes(64)),
            ";EndpointSuffix=core.windows.net\n",
        ],
    )
    yield (
        "azure.shared-access-key",
        "conn",
        [
            'SERVICEBUS="Endpoint=sb://acme.servicebus.windows.net/;SharedAccessKeyName='
            "RootManageSharedAccessKey;SharedAccessKey=",
            Secret(g.b64bytes(32)),
            '"\n',
        ],
    )
    # Secrets made before 2021 have no Q~ mark: only the name says what they are.
    yield (
        "azure.client-secret",
        "env",
        env_file(g, "AZURE_CLIENT_SECRET", Secret(g.chars(ALNUM + "_~.-", 40))),
    )
    yield (
        "azure.entra-client-secret",
        "tf",
        [
            'provider "azurerm" {\n  features {}\n}\narm_client_secret = "',
            Secret(g.chars(ALNUM, 3) + "7Q~" + g.chars(ALNUM + "_~.-", 34)),
            '"\n',
        ],
    )
    yield "vercel.token", "env", env_file(g, "VERCEL_TOKEN", Secret("vcp_" + g.chars(ALNUM, 56)))
    yield (
        "vercel.token-context",
        "cli",
        shell(
            "cat .github/workflows/deploy.sh",
            "vercel deploy --prod --token ",
            Secret(g.chars(ALNUM, 24)),
            " --yes",
        ),
    )
    yield (
        "vault.token",
        "shell",
        shell(
            "vault token create -policy=app",
            "Key                  Value\n---                  -----\ntoken                ",
            Secret("hvs.CAESI" + g.chars(B64URL, 80)),
            "\ntoken_accessor       " + g.chars(ALNUM, 24),
        ),
    )
    yield (
        "ibm.cloud-iam-key",
        "py",
        ['IBM_CLOUD_API_KEY = "', Secret(g.chars(B64URL, 44)), '"\nREGION = "us-south"\n'],
    )
    yield "github.token", "env", env_file(g, "GITHUB_TOKEN", Secret(g.crc_token("ghp_")))
    yield (
        "github.token",
        "git",
        shell(
            "git remote -v",
            "origin\thttps://x-access-token:",
            Secret(g.crc_token("ghs_")),
            "@github.com/acme/api.git (fetch)",
        ),
    )
    yield (
        "github.token",
        "hosts",
        [
            "github.com:\n    oauth_token: ",
            Secret(g.crc_token("gho_")),
            "\n    user: octocat\n    git_protocol: https\n",
        ],
    )
    yield (
        "github.fine-grained-pat",
        "env",
        env_file(
            g, "GH_TOKEN", Secret("github_pat_" + g.chars(ALNUM, 22) + "_" + g.chars(ALNUM, 59))
        ),
    )
    yield (
        "gitlab.token",
        "yaml",
        [
            "gitlab:\n  url: https://gitlab.com\n  token: ",
            Secret("glpat-" + g.chars(B64URL, 20)),
            "\n",
        ],
    )
    yield (
        "gitlab.token",
        "runner",
        ['[[runners]]\n  name = "ci"\n  token = "', Secret("glrt-" + g.chars(B64URL, 20)), '"\n'],
    )
    yield (
        "npm.token",
        "npmrc",
        ["//registry.npmjs.org/:_authToken=", Secret(g.crc_token("npm_")), "\n"],
    )
    yield (
        "npm.npmrc-credential",
        "npmrc",
        [
            "@acme:registry=https://npm.acme.dev/\n//npm.acme.dev/:_authToken=",
            Secret(g.uuid()),
            "\n",
        ],
    )
    yield (
        "pypi.token",
        "pypirc",
        [
            "[pypi]\n  username = __token__\n  password = ",
            Secret("pypi-AgEIcHlwaS5vcmc" + g.chars(B64URL, 120)),
            "\n",
        ],
    )
    yield (
        "huggingface.token",
        "py",
        ['login(token="', Secret("hf_" + g.chars(string.ascii_letters, 34)), '")\n'],
    )
    yield (
        "slack.token",
        "env",
        env_file(
            g,
            "SLACK_BOT_TOKEN",
            Secret(
                f"xoxb-{g.chars(string.digits, 12)}-{g.chars(string.digits, 13)}-"
                f"{g.chars(ALNUM, 24)}"
            ),
        ),
    )
    yield (
        "slack.token",
        "user",
        [
            '{"ok":true,"access_token":"',
            Secret(
                f"xoxp-{g.chars(string.digits, 12)}-{g.chars(string.digits, 12)}-"
                f"{g.chars(string.digits, 13)}-{g.hex(32)}"
            ),
            '","scope":"chat:write"}',
        ],
    )
    yield (
        "slack.webhook",
        "sh",
        shell(
            "cat notify.sh",
            "curl -X POST -d @msg.json ",
            Secret(
                f"https://hooks.slack.com/services/T{g.chars(B62.upper()[:36], 8)}/"
                f"B{g.chars(B62.upper()[:36], 10)}/{g.chars(ALNUM, 24)}"
            ),
        ),
    )
    yield (
        "stripe.live-key",
        "env",
        env_file(g, "STRIPE_SECRET_KEY", Secret("sk_live_" + g.chars(ALNUM, 99))),
    )
    yield (
        "stripe.live-key",
        "py",
        ['stripe.api_key = "', Secret("rk_live_" + g.chars(ALNUM, 24)), '"\n'],
    )
    yield (
        "stripe.test-key",
        "env",
        env_file(g, "STRIPE_KEY", Secret("sk_test_" + g.chars(ALNUM, 99))),
    )
    yield (
        "stripe.webhook-secret",
        "env",
        env_file(g, "STRIPE_WEBHOOK_SECRET", Secret("whsec_" + g.chars(ALNUM, 32))),
    )
    proj = "sk-proj-" + g.chars(B64URL, 74) + "T3BlbkFJ" + g.chars(B64URL, 74)
    yield "openai.api-key", "env", env_file(g, "OPENAI_API_KEY", Secret(proj))
    yield (
        "openai.api-key",
        "log",
        [
            "2025-01-02 10:00:01 DEBUG client config: {'api_key': '",
            Secret("sk-svcacct-" + g.chars(B64URL, 120)),
            "', 'timeout': 600}\n",
        ],
    )
    yield (
        "openai.legacy-key",
        "py",
        [
            'openai.api_key = "',
            Secret("sk-" + g.chars(ALNUM, 20) + "T3BlbkFJ" + g.chars(ALNUM, 20)),
            '"\n',
        ],
    )
    ant = "sk-ant-api03-" + g.chars(B64URL, 93) + "AA"
    yield "anthropic.api-key", "env", env_file(g, "ANTHROPIC_API_KEY", Secret(ant))
    yield (
        "anthropic.api-key",
        "sh",
        shell("echo $ANTHROPIC_API_KEY", Secret("sk-ant-api03-" + g.chars(B64URL, 93) + "AA")),
    )
    yield "generic.sk-api-key", "env", env_file(g, "DASHSCOPE_API_KEY", Secret("sk-" + g.hex(32)))
    yield "twilio.auth-token", "env", env_file(g, "TWILIO_AUTH_TOKEN", Secret(g.hex(32)))
    yield (
        "sendgrid.api-key",
        "env",
        env_file(
            g, "SENDGRID_API_KEY", Secret("SG." + g.chars(B64URL, 22) + "." + g.chars(B64URL, 43))
        ),
    )
    yield (
        "square.oauth-secret",
        "json",
        [
            '{"application_id":"sq0idp-' + g.chars(B64URL, 22) + '","application_secret":"',
            Secret("sq0csp-" + g.chars(B64URL, 43)),
            '"}',
        ],
    )
    yield (
        "mailchimp.api-key",
        "py",
        [
            'client.set_config({"api_key": "',
            Secret(g.hex(32) + "-us" + str(g.rng.randrange(1, 21))),
            '"})\n',
        ],
    )
    yield (
        "pem.private-key",
        "file",
        shell("cat ~/.ssh/id_rsa", Secret(g.pem("RSA PRIVATE KEY", 1190))),
    )
    yield (
        "pem.private-key",
        "openssh",
        ["Here is the key file:\n\n", Secret(g.pem("OPENSSH PRIVATE KEY", 400)), "\n"],
    )
    yield (
        "pem.private-key",
        "service-account",
        [
            '{\n  "type": "service_account",\n  "project_id": "acme-prod",\n  "private_key_id": "'
            + g.hex(40)
            + '",\n  "private_key": "',
            Secret(json.dumps(g.pem("PRIVATE KEY", 1210))[1:-1]),
            '\\n",\n  "client_email": "ci@acme-prod.iam.gserviceaccount.com"\n}\n',
        ],
    )
    yield (
        "pem.private-key",
        "encrypted",
        [
            Secret(
                "-----BEGIN RSA PRIVATE KEY-----\nProc-Type: 4,ENCRYPTED\nDEK-Info: AES-128-CBC,"
                + g.hex(32).upper()
                + "\n\n"
                + "\n".join(g.b64bytes(48) for _ in range(12))
                + "\n-----END RSA PRIVATE KEY-----"
            ),
            "\n",
        ],
    )
    yield (
        "jwt",
        "header",
        shell(
            "curl -v https://api.acme.dev/me",
            "> GET /me HTTP/1.1\n> Authorization: Bearer ",
            Secret(g.jwt()),
            "\n< HTTP/1.1 200 OK",
        ),
    )
    yield "jwt", "json", ['{"id_token": "', Secret(g.jwt("RS256", email="a@b.c")), '"}']
    yield (
        "http.basic-auth",
        "curl",
        shell(
            "cat deploy.sh",
            "curl -H 'Authorization: Basic ",
            Secret(base64.b64encode(f"deploy:{g.password()}".encode()).decode()),
            "' https://ci.acme.dev/api",
        ),
    )
    yield (
        "http.bearer-token",
        "curl",
        shell(
            "cat test.http",
            "GET https://api.acme.dev/v1/items\nAuthorization: Bearer ",
            Secret(g.chars(B64URL, 40)),
            "\nAccept: application/json",
        ),
    )
    yield (
        "http.bearer-token",
        "github",
        [
            'curl -H "Authorization: token ',
            Secret(g.chars(HEX, 40)),
            '" https://api.github.com/user\n',
        ],
    )
    yield (
        "url.password",
        "env",
        env_file(
            g, "DATABASE_URL", ["postgres://app:", Secret(g.password()), "@db.internal:5432/app"]
        ),
    )
    yield (
        "url.password",
        "redis",
        ["cache:\n  url: redis://:", Secret(g.password(20)), "@redis.internal:6379/0\n"],
    )
    yield (
        "url.password",
        "mongo",
        [
            'client = MongoClient("mongodb+srv://admin:',
            Secret(g.password(16)),
            '@cluster0.ab1cd.mongodb.net/?retryWrites=true")\n',
        ],
    )
    yield (
        "netrc.password",
        "netrc",
        shell(
            "cat ~/.netrc",
            "machine api.heroku.com\n  login me@acme.dev\n  password ",
            Secret(g.password(18)),
            "\nmachine git.heroku.com",
        ),
    )
    yield (
        "cli.mysql-password",
        "sh",
        shell(
            "history | grep mysql",
            "  88  mysql -h db -u root -p",
            Secret(g.password(12)),
            " app < dump.sql",
        ),
    )
    yield (
        "cli.password-flag",
        "sh",
        shell(
            "ps aux | grep pg",
            "postgres 77 pg_dump --host db --username app --password=",
            Secret(g.password(12)),
            " app",
        ),
    )
    yield (
        "cli.sshpass",
        "sh",
        ["sshpass -p '", Secret(g.password(12)), "' ssh deploy@10.0.0.5 uptime\n"],
    )
    yield (
        "cli.curl-user",
        "sh",
        shell(
            "cat sync.sh",
            "curl -sS -u admin:",
            Secret(g.password(16)),
            " https://nexus.acme.dev/service/rest/v1/status",
        ),
    )
    yield (
        "cli.redis-cli",
        "sh",
        ["$ redis-cli -h cache -a ", Secret(g.password(16)), " ping\nPONG\n"],
    )
    yield (
        "cli.docker-login",
        "sh",
        ["docker login -u ci -p ", Secret(g.password(16)), " registry.acme.dev\nLogin Succeeded\n"],
    )
    dj = "django-insecure-" + g.chars(string.ascii_lowercase + string.digits + "!@#%^&*(-_=+)", 50)
    yield (
        "django.secret-key",
        "settings",
        [
            "from pathlib import Path\n\n"
            "BASE_DIR = Path(__file__).resolve().parent.parent\n"
            "SECRET_KEY = '",
            Secret(dj),
            "'\nDEBUG = False\n",
        ],
    )
    yield "generic.assignment", "env", env_file(g, "DB_PASSWORD", Secret(g.password()))
    yield (
        "generic.assignment",
        "yaml",
        ["spring:\n  datasource:\n    username: app\n    password: ", Secret(g.password()), "\n"],
    )
    yield (
        "generic.assignment",
        "json",
        [
            '{"appId": "' + g.uuid() + '", "displayName": "ci", "password": "',
            Secret(g.password(34)),
            '", "tenant": "' + g.uuid() + '"}',
        ],
    )
    yield (
        "generic.assignment",
        "toml",
        ['[server]\nport = 8080\nsession_secret = "', Secret(g.chars(ALNUM, 32)), '"\n'],
    )
    yield (
        "generic.assignment",
        "js",
        [
            "const client = new Client({\n  apiKey: '",
            Secret(g.chars(ALNUM, 32)),
            "',\n  retries: 3,\n});\n",
        ],
    )
    yield (
        "generic.assignment",
        "python",
        ['def connect(password: str = "', Secret(g.password()), '"):\n    ...\n'],
    )
    yield (
        "generic.assignment",
        "docker",
        [
            '{"auths": {"registry.acme.dev": {"auth": "',
            Secret(base64.b64encode(f"ci:{g.password()}".encode()).decode()),
            '"}}}',
        ],
    )
    yield "generic.assignment", "key", env_file(g, "MAPBOX_KEY", Secret(g.chars(ALNUM, 40)))
    yield (
        "generic.assignment",
        "ado",
        [
            "Server=tcp:sql.acme.dev;Database=app;User Id=app;Password=",
            Secret(g.password()),
            ";Encrypt=true\n",
        ],
    )
    yield (
        "generic.xml-element",
        "maven",
        [
            "<servers>\n  <server>\n    <id>nexus</id>\n"
            "    <username>deploy</username>\n    <password>",
            Secret(g.password()),
            "</password>\n  </server>\n</servers>\n",
        ],
    )
    yield from vendor_corpus.vendor_specs(g, Secret)
    yield from vendor_corpus.form_specs(g, Secret, g.crc_token)
    yield (
        "generic.keyword-value",
        "chat",
        ["Thanks! Your API key is ", Secret(g.chars(ALNUM, 32)), ", keep it somewhere safe.\n"],
    )
    yield (
        "generic.keyword-value",
        "log",
        ["[DEBUG] acme SECRET ", Secret(g.chars(ALNUM, 40)), "\n[INFO] connected\n"],
    )
    yield (
        "generic.keyword-value",
        "dash",
        ["acme token - '", Secret(g.chars(ALNUM, 32)), "'\n"],
    )
    yield (  # a dotted session token of 600 characters: not attribute access, kept whole
        "generic.assignment",
        "long",
        ["acme token = '", Secret(g.chars(ALNUM, 300) + "." + g.chars(ALNUM, 299)), "'\n"],
    )
    # Jenkins' hudson.util.Secret: version byte 1, IV length 16, data length, IV, data.
    payload = b"\x01\x00\x00\x00\x10\x00\x00\x00\x20" + g.rng.randbytes(16)
    yield (
        "jenkins.encrypted-secret",
        "credentials-xml",
        [
            "<com.cloudbees.plugins.credentials.impl.UsernamePasswordCredentialsImpl>\n"
            "  <id>deploy</id>\n  <username>ci</username>\n  <password>{",
            Secret(base64.b64encode(payload + g.rng.randbytes(32)).decode()),
            "}</password>\n</com.cloudbees.plugins.credentials.impl.UsernamePasswordCredentialsImpl>\n",
        ],
    )
    # Last: a sample added before another would change which contexts that one is tried in.
    yield "generic.assignment", "passphrase", env_file(g, "DB_PASSWORD", Secret(g.passphrase()))
    yield (
        "generic.xml-attribute",
        "web-config",
        [
            '<configuration>\n  <appSettings>\n    <add key="Environment" value="prod" />\n'
            '    <add key="DbPassword" value="',
            Secret(g.password()),
            '" />\n  </appSettings>\n</configuration>\n',
        ],
    )
    yield (
        "cli.secret-flag",
        "ps",
        [
            "USER  PID %CPU COMMAND\nroot    1  0.0 /usr/bin/tini -- /app/server --port 8080"
            " --db-password=",
            Secret(g.password()),
            " --log-level info\n",
        ],
    )
    yield (
        "cli.helm-set",
        "ci",
        [
            "helm upgrade --install api ./chart --set image.tag=1.4.2,postgresql.auth.password=",
            Secret(g.password()),
            " --wait\n",
        ],
    )
    yield (
        "powershell.plaintext-securestring",
        "script",
        [
            '$user = "svc-deploy"\n$pass = ConvertTo-SecureString "',
            Secret(g.password()),
            '" -AsPlainText -Force\n$cred = New-Object PSCredential($user, $pass)\n',
        ],
    )
    yield (
        "cli.psexec",
        "bat",
        [
            "psexec \\\\build01 -u ACME\\deploy -p ",
            Secret(g.password(16)),
            " -accepteula cmd /c C:\\ci\\deploy.bat\n",
        ],
    )
    yield (
        "generic.assignment",
        "url-query",
        [
            "$ curl -s 'https://api.weatherapi.com/v1/current.json?key=",
            Secret(g.hex(32)),
            "&q=London'\n",
        ],
    )
    yield (
        "generic.assignment",
        "digit-name",
        ['sms:\n  8x8_secret: "', Secret(g.password(40)), '"\n'],
    )
    yield (
        "sql.password",
        "migration",
        [
            "-- 0007_app_user.sql\nCREATE ROLE app WITH LOGIN PASSWORD '",
            Secret(g.password()),
            "';\n",
        ],
    )
    yield (
        "cli.ldap-bind",
        "shell",
        [
            "$ ldapsearch -x -H ldap://ldap.acme.dev -D cn=admin,dc=acme,dc=dev -w ",
            Secret(g.password()),
            " -b dc=acme,dc=dev '(uid=jo)'\n",
        ],
    )
    yield (
        "wifi.psk",
        "wpa-supplicant",
        [
            'network={\n    ssid="home-5g"\n    psk="',
            Secret(g.password(20)),
            '"\n    key_mgmt=WPA-PSK\n}\n',
        ],
    )
    yield (
        "shell.fish-set",
        "config-fish",
        [
            "# ~/.config/fish/config.fish\nset -gx EDITOR nvim\nset -gx DB_PASSWORD '",
            Secret(g.password()),
            "'\n",
        ],
    )
    yield (
        "wordpress.salt",
        "wp-config",
        [
            "define( 'DB_HOST', 'localhost' );\ndefine( 'AUTH_KEY',         '",
            Secret(g.chars(ALNUM + "!@#$%^&*()-_[]{}<>~+=,.;:/?|", 64)),
            "' );\n",
        ],
    )
    yield (
        "http.basic-auth",
        "nginx",
        [
            "location /api/ {\n    proxy_pass http://backend;\n"
            '    proxy_set_header Authorization "Basic ',
            Secret(base64.b64encode(f"svc:{g.password(18)}".encode()).decode()),
            '";\n}\n',
        ],
    )
    yield (
        "openvpn.auth-user-pass",
        "ovpn",
        [
            "client\ndev tun\nremote vpn.acme.dev 1194\n<auth-user-pass>\njdoe\n",
            Secret(g.password(16)),
            "\n</auth-user-pass>\n",
        ],
    )
    yield (
        "openvpn.static-key",
        "ovpn",
        [
            "<tls-crypt>\n#\n# 2048 bit OpenVPN static key\n#\n",
            Secret(
                "-----BEGIN OpenVPN Static key V1-----\n"
                + "\n".join(g.hex(32) for _ in range(16))
                + "\n-----END OpenVPN Static key V1-----"
            ),
            "\n</tls-crypt>\n",
        ],
    )
    yield (
        "putty.private-key",
        "ppk",
        [
            "PuTTY-User-Key-File-3: ssh-ed25519\nEncryption: none\nComment: eddsa-key\n"
            f"Public-Lines: 2\n{g.chars(B64, 64)}\n{g.chars(B64, 4)}\nPrivate-Lines: 1\n",
            Secret(g.chars(B64, 44)),
            f"\nPrivate-MAC: {g.hex(64)}\n",
        ],
    )
    yield (
        "rails.master-key",
        "cat",
        shell("cat config/master.key", Secret(g.hex(32))),
    )
    yield (
        "vault.unseal-key",
        "init",
        shell(
            "vault operator init -key-shares=3 -key-threshold=2",
            "Unseal Key 1: ",
            Secret(g.chars(B64, 44)),
            f"\nUnseal Key 2: {g.chars(B64, 44)}\n\nInitial Root Token: hvs.{g.chars(B64URL, 24)}",
        ),
    )
    yield (
        "generic.name-value",
        "k8s-env",
        [
            "    spec:\n      containers:\n      - name: web\n        env:\n"
            "        - name: DB_HOST\n          value: db\n        - name: DB_PASSWORD\n"
            '          value: "',
            Secret(g.password()),
            '"\n',
        ],
    )
    yield (
        "generic.name-value",
        "postman",
        [
            '{\n  "name": "prod",\n  "values": [\n    {"key": "baseUrl", "value": '
            '"https://api.acme.dev", "enabled": true},\n    {"key": "apiKey", "value": "',
            Secret(g.chars(ALNUM, 32)),
            '", "type": "secret", "enabled": true}\n  ]\n}\n',
        ],
    )
    yield (
        "http.session-cookie",
        "browser",
        [
            f"Cookie: _ga=GA1.1.{g.rng.randrange(10**9)}; csrftoken=",
            Secret(g.chars(ALNUM, 32)),
            "; sessionid=",
            Secret(g.chars(ALNUM, 32)),
            "\n",
        ],
    )
    yield (
        "generic.assignment",
        "kubectl",
        [
            "kubectl create secret generic db --from-literal=username=app --from-literal=password=",
            Secret(g.password()),
            "\n",
        ],
    )
    yield (
        "cli.tool-password",
        "keytool",
        [
            "keytool -importcert -alias ca -keystore truststore.jks -storepass ",
            Secret(g.password()),
            " -file ca.crt -noprompt\n",
        ],
    )
    yield (
        "openssl.private-key-text",
        "openssl-pkey-text",
        shell(
            "openssl pkey -in ~/.ssh/id_ecdsa -text -noout",
            Secret(
                "Private-Key: (256 bit)\npriv:\n" + key_hex(g, 32) + "\npub:\n" + key_hex(g, 65)
            ),
            "\nASN1 OID: prime256v1\nNIST CURVE: P-256\n",
        ),
    )
    yield (
        "jwk.private-key",
        "jwks-file",
        [
            '{"keys": [{',
            Secret(
                f'"kty": "EC", "crv": "P-256", "kid": "sig-1", "x": "{g.chars(B64URL, 43)}",'
                f' "y": "{g.chars(B64URL, 43)}", "d": "{g.chars(B64URL, 43)}"'
            ),
            "}]}\n",
        ],
    )
    yield (
        "openssl.private-key-asn1",
        "openssl-asn1parse",
        [
            "$ openssl asn1parse -in server.key\n    0:d=0  hl=2 l=  46 cons: SEQUENCE\n"
            "    2:d=1  hl=2 l=   1 prim: INTEGER           :00",
            Secret(
                "\n    5:d=1  hl=2 l=   5 cons: SEQUENCE\n"
                "    7:d=2  hl=2 l=   3 prim: OBJECT            :ED25519\n"
                "   12:d=1  hl=2 l=  34 prim: OCTET STRING      [HEX DUMP]:0420" + g.hex(64).upper()
            ),
            "\n$ echo done\n",
        ],
    )
    yield from wallet_corpus.wallet_specs(g, Secret)
    # (Last: a spec added before others changes their random values and contexts.)
    # A GitHub token's body alone, its prefix cut off (`${GH_TOKEN#ghp_}`); an npm one's.
    yield (
        "github.token-body",
        "cut",
        shell('echo "${GH_TOKEN#ghp_}"', Secret(g.crc_token("ghp_")[4:]), "\n"),
    )
    yield (
        "github.token-body",
        "npm",
        ["token tail: ", Secret(g.crc_token("npm_")[4:]), " (done)\n"],
    )


def positives(seed: int = 5) -> list[Sample]:
    """About a hundred secrets: every detector, in raw text, and most also JSON-escaped
    inside a tool result or numbered as a Read tool shows a file."""
    g = Gen(seed)
    samples = []
    for n, (rule, label, parts) in enumerate(_specs(g)):
        contexts = ["raw", *(["json"] if n % 2 == 0 else []), *(["read"] if n % 4 == 1 else [])]
        if rule == "pem.private-key":  # multi-line: every way its newlines can arrive
            contexts = list(CONTEXTS)
        for ctx in contexts:
            text, spans = assemble(CONTEXTS[ctx](parts))
            samples.append(Sample(f"{rule}/{label}/{ctx}", text, spans, rule))
    return samples


# -- negatives: what trips secret scanners but is not a secret ---------------------------


def _negative_texts(g: Gen) -> Iterator[tuple[str, str]]:
    """(family, text) pairs."""
    yield from vendor_corpus.harmless_texts(g)
    for _ in range(6):
        pkg = g.rng.choice(["lodash", "react-dom", "@babel/core", "typescript", "zod", "esbuild"])
        yield (
            "lockfile",
            (
                f'    "node_modules/{pkg}": {{\n      "version": "4.{g.rng.randrange(30)}.1",\n'
                f'      "resolved": "https://registry.npmjs.org/{pkg}/-/{pkg.split("/")[-1]}-4.17.21'
                f'.tgz",\n      "integrity": "sha512-{g.b64bytes(64)}",\n      "dev": true,\n'
                f'      "license": "MIT"\n    }},'
            ),
        )
    for _ in range(4):
        yield (
            "yarn-lock",
            (
                f'"@types/node@^20.0.0":\n  version "20.{g.rng.randrange(20)}.3"\n  resolved '
                f'"https://registry.yarnpkg.com/@types/node/-/node-20.11.3.tgz#{g.hex(40)}"\n'
                f"  integrity sha512-{g.b64bytes(64)}\n  dependencies:\n    undici-types "
                '"~5.26.4"\n'
            ),
        )
    for _ in range(4):
        yield (
            "poetry-lock",
            (
                '[[package]]\nname = "requests"\nversion = "2.32.3"\nfiles = [\n    {file = '
                f'"requests-2.32.3-py3-none-any.whl", hash = "sha256:{g.hex(64)}"}},\n    '
                f'{{file = "requests-2.32.3.tar.gz", hash = "sha256:{g.hex(64)}"}},\n]\n'
            ),
        )
    for _ in range(4):
        yield "sha256sum", "\n".join(f"{g.hex(64)}  dist/gate-0.1.{i}.tar.gz" for i in range(4))
    for _ in range(3):
        yield (
            "docker-digest",
            (
                f"$ docker images --digests\nREPOSITORY  TAG  DIGEST  IMAGE ID\npython  3.12  "
                f"sha256:{g.hex(64)}  {g.hex(12)}\nFROM python:3.12-slim@sha256:{g.hex(64)}"
            ),
        )
    for _ in range(3):
        yield (
            "sri",
            (
                f'<script src="https://cdn.jsdelivr.net/npm/bootstrap@5.3.3/dist/js/'
                f'bootstrap.bundle.min.js" integrity="sha384-{g.b64bytes(48)}" '
                'crossorigin="anonymous"></script>'
            ),
        )
    for _ in range(5):
        yield (
            "uuid-log",
            "\n".join(
                f"2025-03-0{i + 1}T12:00:0{i}Z INFO request_id={g.uuid()} user_id={g.uuid()} "
                f'session={g.uuid()} status=200 "id": "{g.uuid()}"'
                for i in range(5)
            ),
        )
    for _ in range(4):
        yield (
            "git-log",
            "\n".join(
                f"commit {g.hex(40)}\nMerge: {g.hex(7)} {g.hex(7)}\nAuthor: Dev <dev@acme.dev>\n"
                f"Date:   Mon Mar 3 10:00:00 2025 +0100\n\n    Fix token refresh (#{i})\n"
                for i in range(3)
            )
            + f"\n$ git rev-parse HEAD\n{g.hex(40)}",
        )
    for _ in range(4):
        yield (
            "trace-ids",
            (
                f"traceparent: 00-{g.hex(32)}-{g.hex(16)}-01\nX-Amzn-Trace-Id: Root=1-{g.hex(8)}-"
                f'{g.hex(24)}\n{{"trace_id": "{g.hex(32)}", "span_id": "{g.hex(16)}", '
                f'"x-request-id": "{g.uuid()}", "etag": "W/\\"{g.hex(32)}\\""}}'
            ),
        )
    yield (
        "doc-example",
        (
            "[default]\naws_access_key_id = AKIAIOSFODNN7EXAMPLE\n"
            "aws_secret_access_key = wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY\n"
        ),
    )
    yield (
        "doc-example",
        (
            "export AWS_ACCESS_KEY_ID=AKIAI44QH8DHBEXAMPLE\nexport "
            "AWS_SECRET_ACCESS_KEY=je7MtGbClwBF/2Zp9Utk/h3yCo8nvbEXAMPLEKEY\n"
        ),
    )
    yield (
        "doc-example",
        ("curl https://api.stripe.com/v1/charges -u sk_test_4eC39HqLyjWDarjtT1zdp7dc:"),
    )
    yield (
        "doc-example",
        (
            "Authorization: Bearer eyJhbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9.eyJzdWIiOi"
            "IxMjM0NTY3ODkwIiwibmFtZSI6IkpvaG4gRG9lIiwiaWF0IjoxNTE2MjM5MDIyfQ."
            "SflKxwRJSMeKKF2QT4fwpMeJf36POk6yJV_adQssw5c"
        ),
    )
    yield "doc-example", 'SLACK_BOT_TOKEN="xoxb-not-a-real-token-this-will-not-work"'
    yield "doc-example", "GITHUB_TOKEN=ghp_xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx"
    yield "doc-example", "OPENAI_API_KEY=sk-...\nANTHROPIC_API_KEY=sk-ant-...\n"
    for text in (
        "API_KEY=YOUR_API_KEY",
        "password: changeme",
        "token: <token>",
        "SECRET=xxxxxxxx",
        'password = "********"',
        "export TOKEN=your-token-here",
        '"apiKey": "<YOUR_API_KEY>"',
        'password: "{{ vault_db_password }}"',
        "PASSWORD=${DB_PASSWORD}",
        "token: ${{ secrets.GITHUB_TOKEN }}",
        "DB_PASSWORD=",
        'client_secret: "REPLACE_ME"',
        "api_key = 'sk-your-key'",
        "postgres://user:password@localhost:5432/app",
        "mongodb+srv://<username>:<password>@cluster0.mongodb.net/test",
        "redis://:${REDIS_PASSWORD}@redis:6379/0",
        "Authorization: Bearer YOUR_ACCESS_TOKEN",
        "Authorization: Basic dXNlcjpwYXNzd29yZA==",
        "machine api.heroku.com login me@acme.dev password $HEROKU_API_KEY",
        "mysql -u root -p app_db < dump.sql",
        "echo $PASSWORD | docker login --username ci --password-stdin registry.acme.dev",
        "psexec \\\\build01 -u ACME\\deploy -p %DEPLOY_PASSWORD% cmd /c deploy.bat",
        "https://cdn.acme.dev/get?key=uploads/2024/05/report-final.pdf",
        "https://cache.acme.dev/lookup?key=user-42&ttl=60",
    ):
        yield "placeholder", text
    for text in (
        'api_key = os.environ["OPENAI_API_KEY"]',
        "const token = process.env.GITHUB_TOKEN;",
        "password=$(cat /run/secrets/db_password)",
        'secret = os.getenv("APP_SECRET")',
        "TOKEN = ENV['API_TOKEN']",
        "client = Client(password=args.password, token=self._token)",
        'api_key: str = Field(..., env="API_KEY")',
        "password: str",
        "def check_password(password: str, hashed: bytes) -> bool:",
        "if token is None:\n    token = get_token(scope)",
        "headers = {'Authorization': f'Bearer {token}'}",
        "secret_name: db-credentials\nsecretKeyRef:\n  name: app\n  key: password",
    ):
        yield "env-reference", text
    yield "public-key", f"ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAI{g.chars(B64, 43)} dev@laptop"
    yield "public-key", f"ssh-rsa AAAAB3NzaC1yc2EAAAADAQABAAABAQ{g.chars(B64, 340)} ci@build"
    yield "public-key", g.pem("PUBLIC KEY", 294)
    yield "public-key", g.pem("CERTIFICATE", 1100)
    yield "public-key", g.pem("PGP PUBLIC KEY BLOCK", 800)
    yield (
        "public-key",
        (
            f"STRIPE_PUBLISHABLE_KEY=pk_live_{g.chars(ALNUM, 99)}\n"
            f'"public_key": "{g.b64bytes(32)}"\n[Peer]\nPublicKey = '
            f"{g.b64bytes(32)}\nrecipient: age1{g.chars(HEX, 58)}"
        ),
    )
    yield "public-key", f"SUPABASE_ANON_KEY={g.jwt(role='anon')}"
    yield "public-key", f"unsigned: {g.jwt('none')}"
    for _ in range(6):
        yield "minified-js", _minified_js(g, 3000, dense=True)
    for _ in range(4):
        yield "base64-image", f'<img src="data:image/png;base64,{g.b64bytes(3000)}" alt="logo">'
    for _ in range(3):
        yield (
            "claude-xml",
            (
                f"<system-reminder>\nThe user opened {g.hex(8)}.py in the IDE.\n"
                "</system-reminder>\n"
                f"<task-notification>\n<task-id>{g.uuid()}</task-id>\n<status>completed</status>\n"
                f"<summary>Refactored token refresh; 3 files changed</summary>\n"
                f"</task-notification>\n<command-name>/compact</command-name>\n"
                f"<tool_use_id>toolu_{g.chars(ALNUM, 24)}</tool_use_id>"
            ),
        )
    yield (
        "config",
        (
            "model: claude-sonnet-4-5\nmax_tokens: 4096\ntoken_url: https://auth.acme.dev/oauth/"
            "token\npassword_min_length: 12\nsecret_name: prod-db\nTOKEN_EXPIRY=3600\n"
            "primary_key: id\nauth_type: oauth2\nnext_page_token: "
            + g.chars(B64URL, 40)
            + "\ncache_key: "
            + g.hex(32)
            + "\npassword_hash: $2b$12$"
            + g.chars(B64, 53)
            + "\nkey_file: ./certs/server.key\nssh_key: ~/.ssh/id_ed25519.pub\n"
        ),
    )
    yield (
        "config",
        (
            '{"usage": {"input_tokens": 1532, "output_tokens": 87, '
            '"cache_read_input_tokens": 12000}, "stop_reason": "end_turn", '
            '"tokenizer": "cl100k_base", "idempotency_key": "' + g.uuid() + '"}'
        ),
    )
    yield (
        "config",
        (
            '[tool.poetry]\nname = "acme"\n[[tool.poetry.source]]\nname = "private'
            '"\nurl = "https://pypi.acme.dev/simple"\npriority = "supplemental"\n'
        ),
    )
    yield (
        "urls",
        (
            "git@github.com:acme/api.git\nhttps://deploy@github.com/acme/api.git\n"
            "postgres://localhost:5432/app\nhttp://[::1]:8080/health\nssh://git@"
            "gitlab.com:22/acme/api.git\nhttps://example.com/a?next=http://b.dev/c"
        ),
    )
    yield (
        "cli",
        (
            "ssh -p 2222 deploy@10.0.0.5\npsql -h db -p 5432 -U app\ngit push -u origin "
            "main\ndocker run -u 1000:1000 -p 8080:80 nginx\ncurl -u admin https://"
            "nexus.acme.dev\nmysql --password app_db"
        ),
    )
    yield (
        "prose",
        (
            "To authenticate, set GITHUB_TOKEN to a personal access token (it starts "
            "with ghp_). The token is read from the environment; never commit it. "
            "Pass the password with --password-stdin rather than as an argument, and "
            "rotate the secret key if it leaks. Bearer authentication is described in "
            "RFC 6750."
        ),
    )
    yield (  # a key's or token's name in words, beside something that is not one
        "key-prose",
        f"Add the SSH public key {g.b64bytes(24)} to the server, then check that the primary"
        f" key {g.hex(16)} is unique. The cache key: {g.hex(64)} expired; GPG key"
        f" {g.hex(16).upper()} signed it. The next token {g.chars(ALNUM, 24)} pages on.\n",
    )
    yield (  # public halves of keys printed as text: what a certificate check shows
        "public-key-text",
        "Public-Key: (256 bit)\npub:\n" + key_hex(g, 65) + "\nASN1 OID: prime256v1\n",
    )
    yield (
        "jwks-public",
        '{"keys": [{"kty": "RSA", "use": "sig", "kid": "'
        + g.hex(8)
        + '", "n": "'
        + g.chars(B64URL, 342)
        + '", "e": "AQAB"}, {"kty": "OKP", "crv": "Ed25519", "x": "'
        + g.chars(B64URL, 43)
        + '"}]}',
    )
    yield from wallet_corpus.wallet_harmless(g)


_JS_PLAIN = (
    "function {a}({b},{c}){{return {b}+{c}}}",
    "var {a}={b}.length;",
    "for(var {a}=0;{a}<{b}.length;{a}++){c}.push({b}[{a}]);",
    "if({a}===void 0)return;",
    'Object.defineProperty({a},"__esModule",{{value:!0}});',
    "{a}.exports=function({b}){{}};",
    "{a}.prototype.render=function(){{return this.props.children}};",
    "case {n}:return {a}.apply(this,arguments);",
    '{a}("div",{{className:"{b}-{c}"}},{b})',
    "new Promise(function({a},{b}){{setTimeout({a},{n})}});",
    "{a}=Math.max({b},{n}),",
    'throw new TypeError("Expected a function");',
    "{a}&&{a}.call({b},{c});",
)
_JS_KEYWORDS = (
    'function(e,t){var n=e.token||t.apiKey;return n?{headers:{Authorization:"Bearer "+n}}:null}',
    "e.password=t.password",
    'var a=this.secretKey||r.get("secret");',
    'if(!i.accessToken)throw new Error("no token");',
    "l=c.auth?c.auth.user:void 0;",
    "t.prototype.refreshToken=function(){return this.http.post(this.tokenUrl)}",
    'const s=new Map([["csrf_token",document.cookie]]);',
    'n.passwordField="password";',
    'o.integrity="sha384-',
    "return u.apiKey=t,u}",
)


def _minified_js(g: Gen, size: int, dense: bool = False) -> str:
    """Bundler output; `dense` packs credential-handling code in every statement (a hard
    negative), otherwise about one statement in sixty touches tokens or passwords."""
    out: list[str] = []
    total = 0
    while total < size:
        if dense or g.rng.random() < 1 / 60:
            part = g.rng.choice(_JS_KEYWORDS)
        else:
            a, b, c = (g.chars(string.ascii_letters, g.rng.randrange(1, 3)) for _ in range(3))
            part = g.rng.choice(_JS_PLAIN).format(a=a, b=b, c=c, n=g.rng.randrange(1000))
        out.append(part)
        total += len(part)
    return "!function(){" + "".join(out) + "}();"


def negatives(seed: int = 5) -> list[Sample]:
    """About a hundred harmless texts that look like secrets to an entropy scanner."""
    return [
        Sample(f"neg/{family}/{i}", text, ())
        for i, (family, text) in enumerate(_negative_texts(Gen(seed)))
    ]


# -- realistic mixed text for the benchmark -----------------------------------------------


def next_turn(chunks: list[str], held: int = 2_000_000) -> tuple[list[str], str]:
    """A conversation's next turn, for the benchmarks: the first chunks, until `held`
    characters, as the history earlier turns screened, and 20 KB of new text."""
    history, size = [], 0
    for c in chunks:
        if size >= held:
            break
        history.append(c)
        size += len(c)
    return history, realistic_text(20_000, seed=99)[0][:20_000]


def realistic_text(size: int, seed: int = 7) -> tuple[str, list[str]]:
    """About `size` characters of agent traffic: lockfiles, minified JS, logs, configs,
    .env dumps, git logs and JSON tool results, with a few secrets among them. Also
    returns the chunks (as separate tool results would arrive)."""
    g = Gen(seed)
    pos, neg = positives(seed), negatives(seed)
    chunks: list[str] = []
    total = 0
    while total < size:
        pick = g.rng.random()
        if pick < 0.04:
            chunk = g.rng.choice(pos).text
        elif pick < 0.12:
            chunk = "\n".join(g.rng.choice(neg).text for _ in range(20))
        elif pick < 0.32:
            chunk = _minified_js(g, 60_000)
        elif pick < 0.62:
            chunk = "\n".join(
                t for f, t in _negative_texts(g) if f in ("lockfile", "yarn-lock", "poetry-lock")
            )
        elif pick < 0.82:
            chunk = _log(g, 300)
        else:
            chunk = json_escaped_text(_log(g, 150) + "\n" + _source(g, 200))
        chunks.append(chunk)
        total += len(chunk)
    return "\n".join(chunks), chunks


def json_escaped_text(text: str) -> str:
    return '{"output":' + json.dumps(text) + ',"metadata":{"exit_code":0}}'


def _log(g: Gen, lines: int) -> str:
    levels = ("INFO", "DEBUG", "WARN")
    msgs = (
        "GET /api/v1/items 200",
        "cache miss for key",
        "retrying request",
        "token refreshed",
        "connected to db.internal:5432",
        "worker started",
        "processed batch",
    )
    return "\n".join(
        f"2025-03-04T10:{i % 60:02d}:{(i * 7) % 60:02d}.{g.rng.randrange(1000):03d}Z "
        f"{g.rng.choice(levels)} [{g.hex(8)}] {g.rng.choice(msgs)} request_id={g.uuid()} "
        f"duration_ms={g.rng.randrange(900)}"
        for i in range(lines)
    )


def _source(g: Gen, lines: int) -> str:
    stmts = (
        "def handler(event, context):",
        "    token = event['headers'].get('authorization')",
        "    if not token:",
        "        return {'statusCode': 401}",
        "    user = verify(token, key=settings.SIGNING_KEY)",
        "import os, json, logging",
        "log = logging.getLogger(__name__)",
        "class Config(BaseSettings):",
        "    api_key: SecretStr",
        "    database_url: str = 'sqlite:///app.db'",
        "    max_tokens: int = 4096",
        "return json.dumps({'ok': True, 'id': item.id})",
    )
    return "\n".join(g.rng.choice(stmts) for _ in range(lines))
