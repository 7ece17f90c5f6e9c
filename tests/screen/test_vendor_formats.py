"""Vendor formats added for issue 14 (formats kingfisher and trufflehog know): each is asked
about wherever an agent's traffic carries it, and its near misses are not that vendor's."""

from __future__ import annotations

import base64
import string
from collections.abc import Callable

import pytest

from gate.screen.detectors import distinctive_prefix
from gate.screen.secrets import Scanner, Tier
from screen.secrets_corpus import Gen
from screen.vendor_corpus import ALNUM, B64URL, LOW, TOKENS

NEW = (
    "hubspot.private-app-token",
    "square.production-token",
    "facebook.access-token",
    "clickup.token",
    "elevenlabs.api-key",
    "fullstory.api-key",
    "teamwork.token",
    "voiceflow.api-key",
    "pagarme.api-key",
    "flexport.api-key",
    "segment.public-api-token",
    "nuget.api-key",
    "stackhawk.api-key",
    "rootly.api-key",
    "cloudflare.origin-ca-key",
    "tines.webhook",
    "infracost.api-key",
    "scalingo.api-token",
    "definednetworking.api-key",
    "render.api-key",
    "settlemint.token",
    "cerebras.api-key",
    "nvidia.api-key",
    "togetherai.api-key",
    "wandb.api-key",
    "plaid.access-token",
    "elastic.cloud-api-key",
    "yandex.cloud-key",
    "grafana.api-key",
    "octopus.api-key",
    "salesforce.access-token",
    "cloudsmith.api-key",
    "minimax.api-key",
    "google.bound-api-key",
    "bitbucket.datacenter-token",
    "alchemy.auth-token",
    "photoroom.api-key",
    # Session 14: formats other scanners list that gate did not know.
    "azure.identifiable-key",
    "cratesio.api-token",
    "maxmind.license-key",
    "neon.api-key",
    "mailersend.api-token",
    "pinterest.token",
    "polar.token",
    "samsara.api-token",
    "unkey.root-key",
    "upcloud.api-token",
    "valtown.api-token",
    "paddle.api-key",
    "persona.api-key",
    "onesignal.api-key",
    "zuplo.api-key",
    "runpod.api-key",
    "mergify.application-key",
    "endorlabs.api-key",
)
# Formats whose body has no fixed length: more of its alphabet glued on is still one token.
OPEN_LENGTH = (
    "facebook.access-token",
    "elastic.cloud-api-key",
    "grafana.api-key",
    "mailersend.api-token",
    "pinterest.token",
    "polar.token",
    "valtown.api-token",
    "mergify.application-key",
)
# Where an agent meets a token: an env file, a JSON tool result, a log line, a Read tool's
# numbered line, a shell command.
PLACES: tuple[Callable[[str], str], ...] = (
    lambda t: f"APP_ENV=prod\nSERVICE_CREDENTIAL={t}\n",
    lambda t: '{"type": "tool_result", "content": "{\\"value\\": \\"' + t + '\\"}"}',
    lambda t: f"2025-03-01T10:00:00Z INFO client configured with {t} (rotating daily)\n",
    lambda t: f"    12→  credential: '{t}'\n    13→  region: eu\n",
    lambda t: f"$ curl -s -d 'v={t}' https://127.0.0.1:8080/hook\n",
)


@pytest.fixture(scope="module")
def scanner() -> Scanner:
    return Scanner()


def _by(scanner: Scanner, text: str, rule: str) -> list[tuple[Tier, str]]:
    return [(f.tier, text[f.start : f.end]) for f in scanner.scan(text) if f.rule_id == rule]


@pytest.mark.parametrize("rule", NEW)
def test_a_new_vendor_token_is_asked_about_wherever_it_sits(scanner: Scanner, rule: str) -> None:
    g = Gen(sum(map(ord, rule)))
    for place in PLACES:
        token = TOKENS[rule](g)
        text = place(token)
        assert _by(scanner, text, rule) == [(Tier.HIGH, token)], text


def _near_misses(rule: str, token: str) -> list[str]:
    """The token cut short, with a character its alphabet lacks in the body, and glued to
    letters before it and after it (Graph API, Elastic and Grafana tokens have no fixed
    length, and letters before a URL leave the URL whole)."""
    mid = len(token) // 2 + 3
    misses = [token[: min(len(token) * 2 // 3, 45)], token[:mid] + "!" + token[mid + 1 :]]
    # Letters glued before or after a token whose prefix is distinctive (`pat-na1-`) leave
    # it that token (gate/screen/detectors.py, distinctive_prefix): no near miss there.
    if rule != "tines.webhook" and not _distinctive(rule):
        misses.append("x" + token)
    if rule not in OPEN_LENGTH and not _distinctive(rule):
        misses.append(token + "Zq9" * 8)
    return misses


def _distinctive(rule: str) -> bool:
    [d] = [d for d in Scanner().detectors if d.id == rule]
    return d.tier is Tier.HIGH and distinctive_prefix(d.keywords)


@pytest.mark.parametrize("rule", NEW)
def test_near_misses_are_not_that_vendor(scanner: Scanner, rule: str) -> None:
    g = Gen(7 + sum(map(ord, rule)))
    token = TOKENS[rule](g)
    for miss in _near_misses(rule, token):
        text = f"APP_ENV=prod\nSERVICE_CREDENTIAL={miss}\n"
        assert _by(scanner, text, rule) == [], miss


def test_a_mailgun_key_needs_the_word_mailgun_before_it(scanner: Scanner) -> None:
    g = Gen(41)
    key = "key-" + g.hex(32)
    said = f"# mailgun: {key}\n"
    assert _by(scanner, said, "mailgun.api-key") == [(Tier.HIGH, key)]
    # Alone, key-<32 hex> is as often a cache key (key-<md5>).
    assert _by(scanner, f"cache hit for {key}\n", "mailgun.api-key") == []
    assert _by(scanner, f"# mailgun\n{key}\n", "mailgun.api-key") == []  # not on its line


@pytest.mark.parametrize(
    ("rule", "word", "make"),
    [
        ("deepseek.api-key", "DEEPSEEK_API_KEY=", lambda g: "sk-" + g.hex(32)),
        ("moonshot.api-key", "kimi_token: ", lambda g: "sk-" + g.chars(B64URL, 48)),
        ("moonshot.api-key", "# Moonshot key ", lambda g: "sk-" + g.chars(ALNUM, 48)),
        ("stability.api-key", "STABILITY_KEY=", lambda g: "sk-" + g.chars(ALNUM, 48)),
        ("cursor.api-key", "CURSOR_API_KEY=", lambda g: "key_" + g.hex(64)),
    ],
)
def test_a_key_of_a_common_shape_is_that_vendors_after_its_name(
    scanner: Scanner, rule: str, word: str, make: Callable[[Gen], str]
) -> None:
    """sk-<hex or base62> is every OpenAI-compatible provider's shape, and key_<hex> a cache
    key's: the vendor's name before it on the line is what makes it that vendor's."""
    g = Gen(len(word) + 50)
    key = make(g)
    assert _by(scanner, f"{word}{key}\n", rule) == [(Tier.HIGH, key)]
    assert _by(scanner, f"value = {key}\n", rule) == []  # the shape alone
    assert _by(scanner, f"{word}\n{key}\n", rule) == []  # not on its line
    assert _by(scanner, f"{word}{key[:-3]}\n", rule) == []  # cut short
    # Run on: not the format at the high tier (a longer token of another kind), though its
    # own length of it may be the key with text glued on (`${KEY}Zq9`): redacted, low.
    assert all(t is Tier.LOW for t, _ in _by(scanner, f"{word}{key}Zq9\n", rule))


def test_a_truenas_key_in_the_websocket_login(scanner: Scanner) -> None:
    g = Gen(51)
    key = f"{g.rng.randrange(1, 999)}-{g.chars(ALNUM, 64)}"
    rule = "truenas.api-key"
    for sep in ("", " ", "\n  "):
        text = f'{{"msg": "method", "method": "auth.login_with_api_key",{sep}"params":[ "{key}" ]}}'
        assert _by(scanner, text, rule) == [(Tier.HIGH, key)], text
    for miss in (key[:-1], key + "Q", key.replace("-", "_")):
        text = f'{{"method": "auth.login_with_api_key", "params": ["{miss}"]}}'
        assert _by(scanner, text, rule) == [], miss
    assert _by(scanner, f'{{"method": "auth.login", "params": ["{key}"]}}', rule) == []


def test_a_thingsboard_device_token_in_its_api_path(scanner: Scanner) -> None:
    g = Gen(52)
    token = g.chars(ALNUM, 20)
    rule = "thingsboard.device-token"
    for scheme in ("https://", "http://", "coap://coap."):
        text = f"{scheme}thingsboard.cloud/api/v1/{token}/telemetry"
        assert _by(scanner, text, rule) == [(Tier.HIGH, token)], text
    for miss in (token[:-1], token + "Q"):
        assert _by(scanner, f"https://thingsboard.cloud/api/v1/{miss}/rpc", rule) == [], miss
    assert _by(scanner, f"https://example.com/api/v1/{token}/telemetry", rule) == []


def test_an_app_configuration_secret_is_taken_from_its_connection_string(
    scanner: Scanner,
) -> None:
    g = Gen(42)
    secret = base64.b64encode(g.rng.randbytes(33)).decode()
    ident = f"{g.chars(ALNUM, 4)}-l0-s0:{g.chars(ALNUM, 20)}"
    rule = "azure.app-configuration-connection-string"
    for head in ("Endpoint=https://", "https://"):
        text = f'conn = "{head}acme.azconfig.io;Id={ident};Secret={secret}"'
        assert _by(scanner, text, rule) == [(Tier.HIGH, secret)]
    other = f"Endpoint=https://acme.example.com;Id={ident};Secret={secret}"
    assert _by(scanner, other, rule) == []


def test_base64_blobs_are_not_read_as_the_new_prefixed_tokens(scanner: Scanner) -> None:
    """A base64 blob (an image, a thinking signature) holds every short prefix somewhere:
    after a + or / inside it, or at the start of one of its wrapped lines."""
    g = Gen(43)
    rng = g.rng
    parts = []
    for _ in range(400):
        # The prefixes base64 can spell, each with the length its format has, so only the
        # boundaries (a + or / before, more base64 after) keep them out.
        prefix, n = rng.choice([("EAAA", 60), ("EAAG", 150), ("oy2", 43)])
        parts.append(base64.b64encode(rng.randbytes(rng.randrange(30, 90))).decode())
        body = g.chars(LOW if prefix == "oy2" else ALNUM, n)
        parts.append(rng.choice("+/") + prefix + body)
    blob = "".join(parts)
    wrapped = "\n".join(blob[i : i + 76] for i in range(0, len(blob), 76))
    for text in (f'{{"data": "{blob}"}}', wrapped):
        new = [f.rule_id for f in scanner.scan(text) if f.rule_id in NEW]
        assert new == []


@pytest.mark.parametrize(
    ("rule", "make"),
    [
        # Shapes other scanners' published examples have (issue 14).
        ("circleci.token", lambda g: f"CCIPAT_{g.chars(ALNUM, 24)}_{g.hex(40)}"),
        ("typeform.token", lambda g: "tfp_" + g.chars(B64URL, 40)),
        ("shippo.token", lambda g: "shippo_test_" + g.chars("0123456789abcdefABCDEF", 40)),
        ("anthropic.api-key", lambda g: "sk-ant-api668-" + g.chars(B64URL, 93) + "AA"),
        ("square.production-token", lambda g: "EAAA" + g.chars(B64URL, 61)),
        ("square.access-token", lambda g: "sq0atp-" + g.chars(B64URL, 23)),
        ("facebook.access-token", lambda g: "EAACEdEose0cBA" + g.chars(ALNUM, 40)),
        # Session 14: New Relic's current license keys, EU accounts' and Insights query
        # keys; Atlassian organization admin keys.
        ("newrelic.key", lambda g: g.hex(32) + "FFFFNRAL"),
        ("newrelic.key", lambda g: "eu01xx" + g.hex(26) + "FFFFNRAL"),
        ("newrelic.key", lambda g: "NRIQ-" + g.chars(B64URL, 25)),
        ("atlassian.api-token", lambda g: "ATCTT3" + g.chars(B64URL, 186)),
    ],
)
def test_issued_shapes_beside_the_documented_one(scanner: Scanner, rule: str, make: object) -> None:
    g = Gen(len(rule) + 100)
    token = make(g)  # type: ignore[operator]
    text = f"value = '{token}'\n"
    assert _by(scanner, text, rule) == [(Tier.HIGH, token)]


def test_a_yaml_block_scalar_in_a_read_tools_numbered_lines(scanner: Scanner) -> None:
    g = Gen(44)
    password = g.chars(string.ascii_letters + string.digits, 20)
    text = (
        "     1→apiVersion: v1\n     2→kind: Secret\n     3→stringData:\n"
        f"     4→  db_password: |\n     5→    {password}\n     6→  username: app\n"
    )
    assert _by(scanner, text, "yaml.block-scalar") == [(Tier.LOW, password)]


def test_a_fingerprinted_asset_name_is_not_an_infracost_key(scanner: Scanner) -> None:
    g = Gen(45)
    asset = f"https://cdn.example.com/img/favicon.ico-{g.hex(32)}.png"
    assert _by(scanner, asset, "infracost.api-key") == []
    key = "ico-" + g.chars(ALNUM, 32)
    assert _by(scanner, f"INFRACOST_API_KEY={key}", "infracost.api-key") == [(Tier.HIGH, key)]


def test_a_yandex_iam_token_and_a_flyv1_header(scanner: Scanner) -> None:
    g = Gen(46)
    iam = f"t1.{g.chars(B64URL, 40)}.{g.chars(B64URL, 86)}"
    assert _by(scanner, f"IAM_TOKEN={iam}\n", "yandex.cloud-key") == [(Tier.HIGH, iam)]
    macaroons = ",".join("fm2_" + g.chars(ALNUM + "+/", 120) for _ in range(2))
    header = f"Authorization: FlyV1 {macaroons}\n"
    assert (Tier.HIGH, macaroons) in _by(scanner, header, "flyio.token")


@pytest.mark.parametrize("name", ["ADO_PAT", "asana_pat", "AZURE_DEVOPS_PAT", "ci-pat"])
def test_a_personal_access_token_under_a_pat_name(scanner: Scanner, name: str) -> None:
    """Azure DevOps' older PATs are 52 base32 characters with no prefix: only the name says
    what they are."""
    g = Gen(47)
    pat = g.chars("abcdefghijklmnopqrstuvwxyz234567", 52)
    assert _by(scanner, f"{name}={pat}\n", "generic.assignment") == [(Tier.LOW, pat)]


def test_names_holding_pat_that_are_not_tokens(scanner: Scanner) -> None:
    g = Gen(48)
    for text in (
        f'file_path = "/srv/{g.chars(ALNUM, 12)}.txt"',
        f'url_pattern = "^/{g.chars(ALNUM, 8)}/[0-9]+$"',
        f"git_patch: {g.hex(40)}",
        f"SPATIAL_REF={g.chars(ALNUM, 20)}",
    ):
        assert scanner.scan(text) == [], text


def test_a_terraform_default_under_a_sensitive_variable_name(scanner: Scanner) -> None:
    g = Gen(49)
    token = g.chars(B64URL, 42)
    text = f'variable "okta_api_token" {{\n  description = "CI"\n  default = "{token}"\n}}\n'
    assert _by(scanner, text, "terraform.variable-default") == [(Tier.LOW, token)]
    public = 'variable "instance_type" {\n  default = "t3.medium"\n}\n'
    assert scanner.scan(public) == []


def test_a_sonar_token_from_before_the_prefixes_under_sonar_login(scanner: Scanner) -> None:
    g = Gen(50)
    token = g.hex(40)
    for text in (
        f"mvn verify sonar:sonar -Dsonar.login={token}\n",
        f'SONAR_LOGIN: "{token}"\n',
        f"sonar.login={token}\n",
    ):
        assert _by(scanner, text, "sonar.login-token") == [(Tier.HIGH, token)], text
    # A commit hash beside the word sonar is not a login.
    assert _by(scanner, f"sonar scan of commit {token}\n", "sonar.login-token") == []


def test_a_bitbucket_datacenter_token_must_decode_to_its_id_and_a_colon(
    scanner: Scanner,
) -> None:
    """BBDC- and 44 base64 characters that do not decode to twelve digits and a colon are
    a fake: still redacted, never asked about."""
    g = Gen(61)
    rule = "bitbucket.datacenter-token"
    fake = "BBDC-" + base64.b64encode(g.rng.randbytes(33)).decode()
    assert _by(scanner, f"BITBUCKET_TOKEN={fake}\n", rule) == [(Tier.LOW, fake)]
    real = TOKENS[rule](g)
    assert _by(scanner, f"BITBUCKET_TOKEN={real}\n", rule) == [(Tier.HIGH, real)]


def test_a_photoroom_sandbox_key_is_found_whole(scanner: Scanner) -> None:
    g = Gen(62)
    key = f"sandbox_sk_pr_{g.chars(LOW, 6)}_{g.hex(40)}"
    assert _by(scanner, f"PHOTOROOM_API_KEY={key}\n", "photoroom.api-key") == [(Tier.HIGH, key)]


def test_a_docker_auth_in_json_escaped_output(scanner: Scanner) -> None:
    """`cat ~/.docker/config.json` inside a tool result: the escape view reads `\\"auth\\"`
    as `"auth "`, which the quoted keyword must still find."""
    g = Gen(63)
    auth = base64.b64encode(f"ci:{g.chars(ALNUM, 14)}".encode()).decode()
    raw = '{"auths": {"registry.acme.dev": {"auth": "' + auth + '"}}}'
    escaped = '{"output": "' + raw.replace('"', '\\"') + '"}'
    for text in (raw, escaped):
        assert _by(scanner, text, "generic.assignment") == [(Tier.LOW, auth)], text


@pytest.mark.parametrize(
    "text",
    [
        "psexec \\\\build01 -u ACME\\deploy -p {v} cmd /c deploy.bat",
        'PsExec64.exe \\\\10.0.0.7 -u admin -p "{v}" -i -d calc.exe',
    ],
)
def test_a_psexec_password(scanner: Scanner, text: str) -> None:
    g = Gen(64)
    password = g.chars(ALNUM + "!@#%", 14)
    line = text.format(v=password)
    assert _by(scanner, line, "cli.psexec") == [(Tier.LOW, password)], line
    for stand_in in ("%DEPLOY_PASSWORD%", "$Password", "<password>"):
        assert _by(scanner, text.format(v=stand_in), "cli.psexec") == [], stand_in


def test_a_key_in_a_urls_query_is_a_key(scanner: Scanner) -> None:
    """`?key=V` / `&key=V` is how many web APIs take their key; a bare `key=V` elsewhere
    (a dict's key, `key = other_key`) is not, nor is a path or a short value."""
    g = Gen(65)
    key = g.chars(ALNUM, 32)
    for text in (
        f"GET https://api.weatherapi.com/v1/current.json?key={key}&q=London",
        f"curl 'https://maps.example.net/v3/tiles?z=3&key={key}'",
    ):
        assert _by(scanner, text, "generic.assignment") == [(Tier.LOW, key)], text
    for text in (
        f"key={key}",
        "https://cdn.acme.dev/get?key=uploads/2024/05/report-final.pdf",
        "https://cache.acme.dev/lookup?key=user-42&ttl=60",
        f"https://api.acme.dev/v1/items?key={g.uuid()}",
    ):
        assert _by(scanner, text, "generic.assignment") == [], text


def test_a_name_may_start_with_a_digit(scanner: Scanner) -> None:
    g = Gen(66)
    secret = g.chars(ALNUM, 40)
    for name in ("8x8_secret", "1password_token", "3scale_api_key"):
        text = f'{name}: "{secret}"\n'
        assert _by(scanner, text, "generic.assignment") == [(Tier.LOW, secret)], text
    assert scanner.scan(f'404: "{secret}"\n') == []


@pytest.mark.parametrize(
    "token",
    [
        "cio" + "x" * 32,
        "napi_" + "0" * 64,
        "ABCDEF_" + "X" * 29 + "_mmk",
        "zpka_" + "a" * 32 + "_00000000",
    ],
)
def test_placeholder_bodies_of_the_new_formats_are_not_findings(
    scanner: Scanner, token: str
) -> None:
    assert scanner.scan(f"TOKEN={token}\n") == []


def test_a_new_relic_mobile_app_token_is_redacted_not_asked_about(scanner: Scanner) -> None:
    """It ships inside the mobile app, as a browser key ships in a web page."""
    g = Gen(67)
    rule = "newrelic.mobile-app-token"
    for token in ("AA" + g.hex(40) + "-NRMA", "eu01xx" + g.hex(36) + "-NRMA"):
        assert _by(scanner, f"NEW_RELIC_APP_TOKEN={token}\n", rule) == [(Tier.LOW, token)]
        assert _by(scanner, f"value={token[:-6]}\n", rule) == []
        assert _by(scanner, f"value=x{token}\n", rule) == []


def test_a_tableau_pat_secret_by_its_shape(scanner: Scanner) -> None:
    g = Gen(68)
    rule = "tableau.pat-secret"
    secret = g.chars(ALNUM + "+/", 22) + "==:" + g.chars(ALNUM, 32)
    for text in (
        f"tableau:\n  pat: ci-upload\n  value: {secret}\n",
        f"pat test-token-6\n{secret}\n",
    ):
        assert _by(scanner, text, rule) == [(Tier.LOW, secret)], text
    for miss in (secret[:-1], "Q" + secret, secret.replace("==:", "=:")):
        assert _by(scanner, f"value {miss}\n", rule) == [], miss


def test_a_quoted_value_on_the_line_after_its_name(scanner: Scanner) -> None:
    """Prettier wraps a long string so: `const apiKey =` and the string on the next line."""
    g = Gen(69)
    key = g.chars(ALNUM, 48)
    text = f'const scrapingBeeApiKey =\n  "{key}";\n'
    assert _by(scanner, text, "generic.assignment") == [(Tier.LOW, key)]
    # Not a value when unquoted on its own line (a shell's `TOKEN=` is empty).
    assert _by(scanner, f"TOKEN=\n{key}\n", "generic.assignment") == []


def test_a_number_glued_to_a_names_last_word(scanner: Scanner) -> None:
    g = Gen(70)
    value = g.chars(ALNUM, 32)
    for name in ("token2", "API_SECRET1", "db_password01"):
        text = f"{name}={value}\n"
        assert _by(scanner, text, "generic.assignment") == [(Tier.LOW, value)], text
    assert scanner.scan(f"max_tokens2={value[:6]}\n") == []


def test_an_azure_storage_key_under_a_storage_key_name(scanner: Scanner) -> None:
    g = Gen(71)
    rule = "azure.storage-account-key"
    key = base64.b64encode(g.rng.randbytes(64)).decode()
    for text in (
        f"export AZURE_STORAGE_KEY={key}\n",
        f"AzureStorageCleanup.exe -storagename acct -storagekey {key} -container sql\n",
    ):
        assert _by(scanner, text, rule) == [(Tier.HIGH, key)], text
    assert _by(scanner, f"storage_key_id={key[:40]}\n", rule) == []
