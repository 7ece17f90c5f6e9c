"""The shapes secrets take in a developer's own files and an agent's commands, found or not."""

from __future__ import annotations

import base64
import json

import pytest

from gate.screen.secrets import Scanner, Tier
from screen.secrets_corpus import Gen


@pytest.fixture(scope="module")
def scanner() -> Scanner:
    return Scanner()


def _found(scanner: Scanner, text: str) -> list[tuple[str, Tier]]:
    return [(text[f.start : f.end], f.tier) for f in scanner.scan(text)]


def _basic(g: Gen) -> str:
    return base64.b64encode(f"svc:{g.password(18)}".encode()).decode()


@pytest.mark.parametrize(
    "template",
    [
        'proxy_set_header Authorization "Basic {v}";',  # nginx
        "add_header Authorization 'Basic {v}';",
        'RequestHeader set Authorization "Basic {v}"',  # Apache
        '    header_up Authorization "Basic {v}"',  # Caddy
        '{{"headers": [{{"name": "Authorization", "value": "Basic {v}"}}]}}',  # HAR
        "    httpHeaders:\n    - name: Authorization\n      value: Basic {v}\n",  # k8s probe
        "- header:\n    key: Authorization\n    value: Basic {v}\n",  # Envoy
    ],
)
def test_a_header_set_by_a_server_config_or_as_a_name_and_value(
    scanner: Scanner, template: str
) -> None:
    v = _basic(Gen(150))
    text = template.format(v=v)
    assert _found(scanner, text) == [(v, Tier.HIGH)]
    escaped = json.dumps({"output": text})  # inside a tool result
    assert [f.tier for f in scanner.scan(escaped)] == [Tier.HIGH]


@pytest.mark.parametrize(
    "line",
    [
        "The Authorization basic scheme sends credentials in base64.",
        'proxy_set_header Authorization "Basic $http_x_auth";',
        'proxy_set_header Authorization "";',
        '{"name": "Authorization", "value": "Bearer {{token}}"}',
    ],
)
def test_authorization_without_credentials_is_not(scanner: Scanner, line: str) -> None:
    assert scanner.scan(line) == []


def test_an_openvpn_profile_s_inline_password(scanner: Scanner) -> None:
    pw = Gen(151).password(16)
    text = f"client\nremote vpn.acme.dev 1194\n<auth-user-pass>\njdoe\n{pw}\n</auth-user-pass>\n"
    assert _found(scanner, text) == [(pw, Tier.LOW)]
    numbered = "".join(f"{n:>6}→{line}\n" for n, line in enumerate(text.splitlines(), 1))
    assert _found(scanner, numbered) == [(pw, Tier.LOW)]
    assert scanner.scan("<auth-user-pass>\n</auth-user-pass>\nauth-user-pass creds.txt\n") == []


def _lines(g: Gen, alphabet: str, width: int, count: int) -> str:
    return "\n".join(g.chars(alphabet, width) for _ in range(count))


def test_private_keys_in_their_own_armor(scanner: Scanner) -> None:
    """PuTTY's private lines and OpenVPN's static key are private keys, asked about."""
    g = Gen(152)
    b64 = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/"
    private = _lines(g, b64, 64, 13) + "\n" + g.chars(b64, 20)
    ppk = (
        "PuTTY-User-Key-File-3: ssh-rsa\nEncryption: none\nComment: rsa-key\nPublic-Lines: 2\n"
        f"{_lines(g, b64, 64, 2)}\nPrivate-Lines: 14\n{private}\nPrivate-MAC: {g.hex(64)}\n"
    )
    assert _found(scanner, ppk) == [(private, Tier.HIGH)]
    static = (
        "-----BEGIN OpenVPN Static key V1-----\n"
        + _lines(g, "0123456789abcdef", 32, 16)
        + "\n-----END OpenVPN Static key V1-----"
    )
    assert _found(scanner, f"<tls-crypt>\n{static}\n</tls-crypt>\n") == [(static, Tier.HIGH)]


def test_keys_printed_by_cat_and_vault_init(scanner: Scanner) -> None:
    g = Gen(153)
    key = g.hex(32)
    assert _found(scanner, f"$ cat config/master.key\n{key}\n") == [(key, Tier.LOW)]
    assert _found(scanner, f"$ cat config/credentials/production.key\n{key}\n$ ") == [
        (key, Tier.LOW)
    ]
    b64 = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/"
    shares = [g.chars(b64, 44) for _ in range(2)]
    init = f"Unseal Key 1: {shares[0]}\nUnseal Key 2: {shares[1]}\n\nVault initialized\n"
    assert _found(scanner, init) == [(s, Tier.HIGH) for s in shares]


@pytest.mark.parametrize(
    "text",
    [
        "$ cat master.key\n00000000000000000000000000000000\n",
        "$ md5sum master.key\nd41d8cd98f00b204e9800998ecf8427e  master.key\n",
        "Unseal Key 1: <redacted>\nUnseal Progress: 1/3\n",
        "Private-Lines: 14\nPrivate-MAC: 0123\n",
    ],
)
def test_their_look_alikes_are_not(scanner: Scanner, text: str) -> None:
    assert scanner.scan(text) == []


def test_every_session_cookie_of_a_cookie_line(scanner: Scanner) -> None:
    """A browser's Cookie: line holds several; the first after the header was missed
    whenever a later one also named a session."""
    g = Gen(154)
    a, b, c = g.chars(_ALNUM, 32), g.chars(_ALNUM, 26), g.chars(_ALNUM, 40)
    line = f"Cookie: _ga=GA1.1.1; JSESSIONID={a}; theme=dark; PHPSESSID={b}\n"
    assert _found(scanner, line) == [(a, Tier.LOW), (b, Tier.LOW)]
    har = json.dumps({"name": "Cookie", "value": f"theme=dark; connect.sid={c}"})
    assert _found(scanner, har) == [(c, Tier.LOW)]


def test_a_later_cookie_only_on_a_cookie_line(scanner: Scanner) -> None:
    value = Gen(155).chars(_ALNUM, 32)
    assert scanner.scan(f"Cookie: theme=dark\nx=1; sessid={value}\n") == []


_ALNUM = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789"


@pytest.mark.parametrize(
    "template",
    [
        "    env:\n    - name: DB_HOST\n      value: db\n"
        '    - name: DB_PASSWORD\n      value: "{v}"\n',
        "        env:\n          - name: API_TOKEN\n            value: {v}\n",
        '{{"environment": [{{"name": "NODE_ENV", "value": "production"}}, '
        '{{"name": "STRIPE_API_KEY", "value": "{v}"}}]}}',  # ECS
        '{{"values": [{{"key": "apiKey", "value": "{v}", "type": "secret"}}]}}',  # Postman
        '[{{"ParameterKey": "DBPassword", "ParameterValue": "{v}"}}]',  # CloudFormation
        '{{"Parameter": {{"Name": "/prod/db/password", "Type": "SecureString", "Value": "{v}"}}}}',
        '{{"cookies": [{{"name": "sessionid", "value": "{v}", "httpOnly": true}}]}}',  # HAR
    ],
)
def test_a_name_and_a_value_in_two_fields(scanner: Scanner, template: str) -> None:
    v = Gen(156).chars(_ALNUM, 32)
    text = template.format(v=v)
    assert _found(scanner, text) == [(v, Tier.LOW)]
    escaped = json.dumps(text)
    assert [escaped[f.start : f.end] for f in scanner.scan(escaped)] == [v]


@pytest.mark.parametrize(
    "text",
    [
        "- name: DB_PASSWORD\n  valueFrom:\n    secretKeyRef:\n      name: db\n      key: pw\n",
        '{"name": "DB_PASSWORD", "value": "${DB_PASSWORD}"}',
        '{"name": "password_min_length", "value": "12"}',
        '{"key": "tokenUrl", "value": "https://auth.acme.dev/oauth/token"}',
        '{"name": "session", "value": "active"}',
        '{"name": "sessionId", "value": "3f2b8c1e-5a4d-4e8f-9b7c-1d2e3f4a5b6c"}',
        '{"Key": "Name", "Value": "web-server-production-01"}',
    ],
)
def test_a_name_and_a_value_that_hold_no_secret(scanner: Scanner, text: str) -> None:
    assert scanner.scan(text) == []


@pytest.mark.parametrize(
    "template",
    [
        "kubectl create secret generic db --from-literal=username=app --from-literal=password={v}",
        "java -Ddb.password={v} -jar app.jar",
        "mvn deploy -Dspring.datasource.password={v} -DskipTests",
        "gcloud run deploy web --set-env-vars DB_HOST=db,DB_PASS={v}",
        "gcloud run deploy web --update-env-vars=DB_HOST=db,API_TOKEN={v} --region x",
        "az login --service-principal -u app -p {v} --tenant t",
        "keytool -importcert -keystore ks.jks -storepass {v} -file ca.crt",
        "zip -P {v} -r backup.zip data/",
        "7z a -p{v} backup.7z data/",
        "smbclient //fs/share -U jdoe%{v}",
        "lftp -u jdoe,{v} ftp.acme.dev",
        "gh secret set DEPLOY_KEY --body '{v}'",
    ],
)
def test_a_secret_on_a_command_line(scanner: Scanner, template: str) -> None:
    v = Gen(157).chars(_ALNUM, 20)
    text = template.format(v=v) + "\n"
    assert _found(scanner, text) == [(v, Tier.LOW)]


@pytest.mark.parametrize(
    "line",
    [
        "kubectl create configmap app --from-literal=token_ttl=3600",
        "java -Dlog.level=debug -Dtoken.file=/run/secrets/token -jar app.jar",
        "gcloud run deploy web --set-env-vars DB_HOST=db,DB_PASS=$DB_PASS",
        "keytool -list -keystore ks.jks -storepass:env STOREPASS",
        'gh secret set DEPLOY_KEY --body "$DEPLOY_KEY"',
        "zip -r backup.zip data/ && gzip -9 log.txt",
        "x = f(a, token=tok)",
        "e.password=t.pw",
    ],
)
def test_a_command_line_without_a_secret(scanner: Scanner, line: str) -> None:
    assert scanner.scan(line + "\n") == []
