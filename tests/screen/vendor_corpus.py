"""Positives for the vendor detectors (rules/secrets/devtools.yaml, saas.yaml), the format
detectors (forms.yaml), and tokens hidden by invisible characters, folds or base64.

Each token is built here from the format its vendor documents, with random characters,
never from the detector's own regex (a test that derived its input from the pattern
would only check that the pattern matches itself).
"""

from __future__ import annotations

import base64
import string
from collections.abc import Callable, Iterator
from typing import Any

ALNUM = string.ascii_letters + string.digits
B64URL = ALNUM + "-_"
UP = string.ascii_uppercase + string.digits
LOW = string.ascii_lowercase + string.digits
BECH32 = "qpzry9x8gf2tvdw0s3jn54khce6mua7l".upper()


def _guid(g: Any) -> str:
    h = g.hex(32)
    return f"{h[:8]}-{h[8:12]}-{h[12:16]}-{h[16:20]}-{h[20:]}"


def _azure_key(g: Any) -> str:
    """One of Microsoft's identifiable Azure key formats: random base64, the service's
    signature at its place, a few characters, the padding."""
    b64 = ALNUM + "+/"
    return g.rng.choice(
        [
            lambda: (
                g.chars(b64, 33) + "+ASb" + g.chars("ABCDEFGHIJKLMNOP", 1) + g.chars(b64, 5) + "="
            ),
            lambda: g.chars(b64, 76) + "+ASt" + g.chars(b64, 5) + g.chars("AQgw", 1) + "==",
            lambda: g.chars(ALNUM, 42) + "AzSe" + g.chars("ABCD", 1) + g.chars(ALNUM, 5),
            lambda: g.chars(b64, 42) + "+ACR" + g.chars("ABCD", 1) + g.chars(b64, 5),
            lambda: g.chars(B64URL, 44) + "AzFu" + g.chars(B64URL, 5) + g.chars("AQgw", 1) + "==",
        ]
    )()


def _b64json(g: Any, n: int) -> str:
    return "eyJ" + g.chars(B64URL, n)


TOKENS: dict[str, Callable[[Any], str]] = {
    "onepassword.secret-key": lambda g: (
        f"A3-{g.chars(UP, 6)}-{g.chars(UP, 6)}-{g.chars(UP, 5)}"
        f"-{g.chars(UP, 5)}-{g.chars(UP, 5)}-{g.chars(UP, 5)}"
    ),
    "onepassword.service-account-token": lambda g: "ops_" + _b64json(g, 600),
    "age.secret-key": lambda g: "AGE-SECRET-KEY-1" + g.chars(BECH32, 58),
    "atlassian.api-token": lambda g: "ATATT3" + g.chars(B64URL, 186),
    "bitbucket.app-password": lambda g: "ATBB" + g.chars(ALNUM, 32),
    "bitbucket.datacenter-token": lambda g: (
        "BBDC-"
        + base64.b64encode(
            g.chars(string.digits, 12).encode() + b":" + g.rng.randbytes(20)
        ).decode()
    ),
    "alchemy.auth-token": lambda g: "alcht_" + g.chars(ALNUM, 30),
    "photoroom.api-key": lambda g: f"sk_pr_{g.chars(LOW, 8)}_{g.hex(40)}",
    "azure.identifiable-key": lambda g: _azure_key(g),
    "cratesio.api-token": lambda g: "cio" + g.chars(ALNUM, 32),
    "maxmind.license-key": lambda g: f"{g.chars(ALNUM, 6)}_{g.chars(ALNUM + '_', 29)}_mmk",
    "neon.api-key": lambda g: "napi_" + g.chars(ALNUM, 64),
    "mailersend.api-token": lambda g: "mlsn." + g.chars(ALNUM, 40),
    "pinterest.token": lambda g: "pina_" + g.chars(B64URL, 30),
    "polar.token": lambda g: "polar_oat_" + g.chars(B64URL, 30),
    "samsara.api-token": lambda g: "samsara_api_" + g.chars(ALNUM, 28),
    "unkey.root-key": lambda g: "unkey_" + g.chars(ALNUM, 24),
    "upcloud.api-token": lambda g: "ucat_" + g.chars(ALNUM, 26),
    "valtown.api-token": lambda g: "vtwn_" + g.chars(B64URL, 30),
    "paddle.api-key": lambda g: (
        f"pdl_live_apikey_{g.chars(LOW, 26)}_{g.chars(ALNUM, 22)}_{g.chars(ALNUM, 3)}"
    ),
    "persona.api-key": lambda g: "persona_production_" + g.chars(LOW + "-", 24),
    "onesignal.api-key": lambda g: "os_v2_app_" + g.chars("abcdefghijklmnopqrstuvwxyz234567", 103),
    "zuplo.api-key": lambda g: f"zpka_{g.chars(LOW, 32)}_{g.hex(8)}",
    "runpod.api-key": lambda g: "rpa_" + g.chars(UP, 40) + g.chars(ALNUM, 6),
    "mergify.application-key": lambda g: "mergify_application_key_" + g.chars(B64URL, 44),
    "endorlabs.api-key": lambda g: "endr+" + g.chars(ALNUM + "-", 16),
    "clojars.token": lambda g: "CLOJARS_" + g.chars(LOW, 60),
    "databricks.token": lambda g: "dapi" + g.hex(32),
    "digitalocean.token": lambda g: "dop_v1_" + g.hex(64),
    "docker.hub-token": lambda g: "dckr_pat_" + g.chars(B64URL, 27),
    "doppler.token": lambda g: "dp.st." + g.chars(ALNUM, 43),
    "dynatrace.token": lambda g: f"dt0c01.{g.chars(UP, 24)}.{g.chars(UP, 64)}",
    "flyio.token": lambda g: "fo1_" + g.chars(B64URL, 43),
    "gitlab.runner-registration-token": lambda g: "GR1348941" + g.chars(B64URL, 20),
    "gitlab.session-cookie": lambda g: g.chars(LOW, 32),
    "grafana.token": lambda g: "glsa_" + g.chars(ALNUM, 32) + "_" + g.hex(8),
    "harness.token": lambda g: (
        f"pat.{g.chars(B64URL, 22)}.{g.chars(ALNUM, 24)}.{g.chars(ALNUM, 20)}"
    ),
    "terraform.cloud-token": lambda g: f"{g.chars(ALNUM, 14)}.atlasv1.{g.chars(ALNUM, 67)}",
    "heroku.api-key": lambda g: "HRKU-AA" + g.chars(B64URL, 58),
    "jfrog.token": lambda g: "AKCp" + g.chars(ALNUM, 69),
    "openshift.token": lambda g: "sha256~" + g.chars(B64URL, 43),
    "sourcegraph.token": lambda g: f"sgp_{g.hex(16)}_{g.hex(40)}",
    "sentry.token": lambda g: "sntryu_" + g.hex(64),
    "sonar.token": lambda g: "squ_" + g.hex(40),
    "rubygems.api-key": lambda g: "rubygems_" + g.hex(48),
    "pulumi.token": lambda g: "pul-" + g.hex(40),
    "postman.api-key": lambda g: f"PMAK-{g.hex(24)}-{g.hex(34)}",
    "planetscale.token": lambda g: "pscale_tkn_" + g.chars(ALNUM, 43),
    "linear.api-key": lambda g: "lin_api_" + g.chars(ALNUM, 40),
    "buildkite.token": lambda g: "bkua_" + g.hex(40),
    "circleci.token": lambda g: f"CCIPAT_{g.chars(ALNUM, 22)}_{g.hex(40)}",
    "tailscale.key": lambda g: f"tskey-auth-{g.chars(ALNUM, 12)}-{g.chars(ALNUM, 33)}",
    "prefect.api-key": lambda g: "pnu_" + g.chars(ALNUM, 36),
    "deno.token": lambda g: "ddp_" + g.chars(ALNUM, 36),
    "supabase.secret-key": lambda g: "sbp_" + g.hex(40),
    "azure.devops-pat": lambda g: (
        g.chars(ALNUM, 52) + "JQQJ99" + g.chars(ALNUM, 18) + "AZDO" + g.chars(ALNUM, 4)
    ),
    "azure.entra-client-secret": lambda g: g.chars(ALNUM, 3) + "8Q~" + g.chars(ALNUM + "_~.-", 34),
    "alibaba.access-key-id": lambda g: "LTAI" + g.chars(ALNUM, 20),
    "aws.bedrock-api-key": lambda g: "ABSK" + base64.b64encode(g.rng.randbytes(132)).decode(),
    "docker.swarm-token": lambda g: f"SWMTKN-1-{g.chars(LOW, 50)}-{g.chars(LOW, 25)}",
    "cockroachlabs.api-key": lambda g: f"CCDB1_{g.chars(ALNUM, 22)}_{g.chars(ALNUM, 40)}",
    "apify.token": lambda g: "apify_api_" + g.chars(ALNUM, 36),
    "datastax.astra-token": lambda g: f"AstraCS:{g.chars(ALNUM, 24)}:{g.hex(64)}",
    "devcycle.server-key": lambda g: "dvc_server_" + g.chars(LOW + "_", 36),
    "clickhouse.cloud-secret": lambda g: "4b1d" + g.chars(ALNUM, 38),
    "discord.webhook": lambda g: (
        f"https://discord.com/api/webhooks/{g.chars(string.digits, 19)}/{g.chars(B64URL, 68)}"
    ),
    "mapbox.secret-token": lambda g: f"sk.{_b64json(g, 60)}.{g.chars(B64URL, 22)}",
    "mapbox.token": lambda g: f"pk.{_b64json(g, 60)}.{g.chars(B64URL, 22)}",
    "newrelic.key": lambda g: "NRAK-" + g.chars(UP, 27),
    "newrelic.browser-key": lambda g: "NRJS-" + g.hex(19),
    "shopify.token": lambda g: "shpat_" + g.hex(32),
    "slack.legacy-token": lambda g: "xoxa-2-" + g.chars(ALNUM, 40),
    "telegram.bot-token": lambda g: g.chars(string.digits, 10) + ":AA" + g.chars(B64URL, 33),
    "perplexity.api-key": lambda g: "pplx-" + g.chars(ALNUM, 48),
    "groq.api-key": lambda g: "gsk_" + g.chars(ALNUM, 52),
    "xai.api-key": lambda g: "xai-" + g.chars(ALNUM, 80),
    "openrouter.api-key": lambda g: "sk-or-v1-" + g.hex(64),
    "langsmith.api-key": lambda g: f"lsv2_pt_{g.hex(32)}_{g.hex(10)}",
    "replicate.token": lambda g: "r8_" + g.chars(ALNUM, 37),
    "pinecone.api-key": lambda g: f"pcsk_{g.chars(ALNUM, 6)}_{g.chars(ALNUM, 60)}",
    "huggingface.org-token": lambda g: "api_org_" + g.chars(string.ascii_letters, 34),
    "notion.token": lambda g: "ntn_" + g.chars(string.digits, 11) + g.chars(ALNUM, 35),
    "posthog.personal-key": lambda g: "phx_" + g.chars(ALNUM, 43),
    "brevo.api-key": lambda g: f"xkeysib-{g.hex(64)}-{g.chars(ALNUM, 16)}",
    "shippo.token": lambda g: "shippo_live_" + g.hex(40),
    "easypost.api-key": lambda g: "EZAK" + g.chars(ALNUM, 54),
    "figma.token": lambda g: "figd_" + g.chars(B64URL, 40),
    "contentful.token": lambda g: "CFPAT-" + g.chars(B64URL, 43),
    "duffel.token": lambda g: "duffel_live_" + g.chars(B64URL, 43),
    "flutterwave.secret-key": lambda g: "FLWSECK-" + g.chars("abcdefgh0123456789", 32) + "-X",
    "adafruit.io-key": lambda g: "aio_" + g.chars(ALNUM, 28),
    "typeform.token": lambda g: "tfp_" + g.chars(B64URL, 59),
    "readme.api-key": lambda g: "rdme_" + g.chars(LOW, 70),
    "firebase.fcm-server-key": lambda g: f"AAAA{g.chars(B64URL, 7)}:APA91b{g.chars(B64URL, 134)}",
    "airtable.pat": lambda g: f"pat{g.chars(ALNUM, 14)}.{g.hex(64)}",
    "password-hash.crypt": lambda g: "$6$" + g.chars(ALNUM, 16) + "$" + g.chars(ALNUM + "./", 86),
    "password-hash.kerberos": lambda g: (
        f"$krb5asrep$23$svc_sql@CORP.ACME.DEV:{g.hex(32)}${g.hex(232)}"
    ),
    "msteams.webhook": lambda g: (
        f"https://acme.webhook.office.com/webhookb2/{_guid(g)}@{_guid(g)}/IncomingWebhook/"
        f"{g.hex(32)}/{_guid(g)}"
    ),
    "zoho.oauth-token": lambda g: f"1000.{g.hex(32)}.{g.hex(32)}",
    "mongodb.service-account-secret": lambda g: "mdb_sa_sk_" + g.chars(B64URL, 40),
    "frameio.token": lambda g: "fio-u-" + g.chars(B64URL, 64),
    "ubidots.token": lambda g: "BBUS-" + g.chars(ALNUM, 30),
    "dependencytrack.api-key": lambda g: "odt_" + g.chars(ALNUM, 32),
    "dropbox.access-token": lambda g: "sl.u." + g.chars(B64URL, 600),
    "square.access-token": lambda g: "sq0atp-" + g.chars(B64URL, 22),
    "hubspot.private-app-token": lambda g: "pat-na1-" + _guid(g),
    "square.production-token": lambda g: "EAAA" + g.chars(B64URL, 60),
    "facebook.access-token": lambda g: "EAAG" + g.chars(ALNUM, 180),
    "clickup.token": lambda g: f"pk_{g.chars(string.digits, 8)}_{g.chars(UP, 32)}",
    "elevenlabs.api-key": lambda g: "sk_" + g.hex(48),
    "fullstory.api-key": lambda g: "na1." + base64.b64encode(g.rng.randbytes(75)).decode(),
    "teamwork.token": lambda g: "tkn.v1_" + base64.b64encode(g.rng.randbytes(53)).decode(),
    "voiceflow.api-key": lambda g: f"VF.DM.{g.hex(24)}.{g.chars(ALNUM, 16)}",
    "pagarme.api-key": lambda g: "ak_live_" + g.chars(ALNUM, 30),
    "flexport.api-key": lambda g: "shltm_" + g.chars(B64URL, 40),
    "segment.public-api-token": lambda g: "sgp_" + g.chars(ALNUM, 64),
    "mailgun.api-key": lambda g: "key-" + g.hex(32),
    "tines.webhook": lambda g: (
        f"https://acme-{g.chars(LOW, 6)}.tines.com/webhook/{g.chars(LOW, 32)}/{g.chars(LOW, 32)}"
    ),
    "nuget.api-key": lambda g: "oy2" + g.chars(LOW, 43),
    "stackhawk.api-key": lambda g: f"hawk.{g.chars(B64URL, 20)}.{g.chars(B64URL, 20)}",
    "rootly.api-key": lambda g: "rootly_" + g.hex(64),
    "cloudflare.origin-ca-key": lambda g: f"v1.0-{g.hex(24)}-{g.hex(146)}",
    "azure.app-configuration-connection-string": lambda g: base64.b64encode(
        g.rng.randbytes(33)
    ).decode(),
    "infracost.api-key": lambda g: "ico-" + g.chars(ALNUM, 32),
    "scalingo.api-token": lambda g: "tk-us-" + g.chars(B64URL, 48),
    "definednetworking.api-key": lambda g: f"dnkey-{g.chars(LOW, 26)}-{g.chars(LOW, 52)}",
    "render.api-key": lambda g: "rnd_" + g.chars(ALNUM, 28),
    "settlemint.token": lambda g: "sm_pat_" + g.chars(LOW, 16),
    "cerebras.api-key": lambda g: "csk-" + g.chars(LOW, 48),
    "cloudsmith.api-key": lambda g: "csa_" + g.hex(30) + g.chars(ALNUM, 6),
    "minimax.api-key": lambda g: "sk-api-" + g.chars(B64URL, 119),
    "google.bound-api-key": lambda g: "AQ.Ab8RN6" + g.chars(B64URL, 44),
    # In the place only their own API has (vendor_specs writes them so).
    "truenas.api-key": lambda g: f"{g.rng.randrange(1, 99)}-{g.chars(ALNUM, 64)}",
    "thingsboard.device-token": lambda g: g.chars(LOW, 20),
    # Said after the vendor's name on the line (vendor_specs writes it so).
    "deepseek.api-key": lambda g: "sk-" + g.hex(32),
    "moonshot.api-key": lambda g: "sk-" + g.chars(ALNUM, 48),
    "stability.api-key": lambda g: "sk-" + g.chars(ALNUM, 48),
    "cursor.api-key": lambda g: "key_" + g.hex(64),
    "nvidia.api-key": lambda g: "nvapi-" + g.chars(B64URL, 64),
    "togetherai.api-key": lambda g: "tgp_v1_" + g.chars(B64URL, 43),
    "wandb.api-key": lambda g: "wandb_v1_" + g.chars(ALNUM + "_", 77),
    "plaid.access-token": lambda g: "access-production-" + _guid(g),
    "elastic.cloud-api-key": lambda g: "essu_" + g.chars(B64URL, 100),
    "yandex.cloud-key": lambda g: "AQVN" + g.chars(B64URL, 36),
    "grafana.api-key": lambda g: base64.b64encode(
        f'{{"k":"{g.chars(ALNUM, 32)}","n":"ci-{g.chars(LOW, 6)}","id":1}}'.encode()
    ).decode(),
    "octopus.api-key": lambda g: "API-" + g.chars(UP, 26),
    "salesforce.access-token": lambda g: (
        f"00D{g.chars(ALNUM, 12)}!{g.chars(ALNUM, 20)}.{g.chars(ALNUM + '._', 76)}"
    ),
    "sonar.login-token": lambda g: g.hex(40),
    "azure.sas-token": lambda g: (
        "sv=2022-11-02&ss=b&srt=co&sp=rl&se=2026-01-01T00:00:00Z&spr=https&sig="
        + base64.b64encode(g.rng.randbytes(32))
        .decode()
        .replace("+", "%2B")
        .replace("/", "%2F")
        .replace("=", "%3D")
    ),
    "azure.workflow-trigger-url": lambda g: (
        f"https://prod-{g.rng.randrange(10, 99)}.westeurope.logic.azure.com:443/workflows/"
        f"{g.hex(32)}/triggers/manual/paths/invoke?api-version=2016-06-01&sp=%2Ftriggers"
        f"%2Fmanual%2Frun&sv=1.0&sig={g.chars(B64URL, 43)}"
    ),
    "newrelic.mobile-app-token": lambda g: "AA" + g.hex(40) + "-NRMA",
    "tableau.pat-secret": lambda g: g.chars(ALNUM + "+/", 22) + "==:" + g.chars(ALNUM, 32),
}
# Where each token sits: a neutral name, so the vendor detector is what finds it.
_PLACES: tuple[Callable[[str, Any], list[Any]], ...] = (
    lambda rule, s: [f"# {rule.split('.')[0]} settings\nvalue: ", s, "\nregion: eu\n"],
    lambda rule, s: ["$ cat out.log\n2025-03-01 INFO using ", s, " for the upload\n$ "],
    lambda rule, s: ['{"config": {"credential": "', s, '", "retries": 3}}'],
)


_SAID_AFTER = {
    "deepseek.api-key": "DEEPSEEK_API_KEY",
    "moonshot.api-key": "MOONSHOT_API_KEY",
    "stability.api-key": "STABILITY_API_KEY",
    "cursor.api-key": "CURSOR_API_KEY",
}


def vendor_specs(g: Any, secret: Callable[[str], Any]) -> Iterator[tuple[str, str, list[Any]]]:
    """(rule id, label, parts) per vendor detector; `secret` marks the token's span."""
    for n, (rule, make) in enumerate(TOKENS.items()):
        token = secret(make(g))
        if rule == "gitlab.session-cookie":
            yield rule, "cookie", ["Cookie: _gitlab_session=", token, "; path=/\n"]
        elif rule == "sonar.login-token":
            yield (
                rule,
                "maven",
                ["$ mvn sonar:sonar -Dsonar.login=", token, " -Dsonar.host.url=x\n"],
            )
        elif rule == "mailgun.api-key":
            yield (
                rule,
                "config",
                ["MAILGUN_DOMAIN=mg.acme.dev\n# mailgun sending key: ", token, "\n"],
            )
        elif rule in _SAID_AFTER:
            yield rule, "env", [f"{_SAID_AFTER[rule]}=", token, "\n"]
        elif rule == "truenas.api-key":
            yield (
                rule,
                "websocket",
                [
                    '{"id": "1", "msg": "method", "method": "auth.login_with_api_key",\n'
                    ' "params": ["',
                    token,
                    '"]}',
                ],
            )
        elif rule == "thingsboard.device-token":
            yield (
                rule,
                "url",
                ["$ curl -d @t.json https://thingsboard.cloud/api/v1/", token, "/telemetry\n"],
            )
        elif rule == "azure.app-configuration-connection-string":
            yield (
                rule,
                "connection-string",
                [
                    "Endpoint=https://acme-cfg.azconfig.io;Id="
                    + g.chars(ALNUM, 4)
                    + "-l0-s0:"
                    + g.chars(ALNUM, 20)
                    + ";Secret=",
                    token,
                    "\n",
                ],
            )
        elif rule == "password-hash.crypt":
            yield rule, "shadow", ["root:", token, ":19700:0:99999:7:::\n"]
        else:
            yield rule, "place", _PLACES[n % len(_PLACES)](rule, token)


def form_specs(
    g: Any, secret: Callable[[str], Any], crc_token: Callable[[str], str]
) -> Iterator[tuple[str, str, list[Any]]]:
    """Secrets known by the format around them, and tokens written to evade a scanner."""
    akid = "AKIA" + g.chars(UP, 16)
    yield (
        "aws.credentials-pair",
        "csv",
        [
            "$ cat ~/Downloads/ci_accessKeys.csv\nAccess key ID,Secret access key\n" + akid + ",",
            secret(g.chars(ALNUM + "+/", 40)),
            "\n$ ",
        ],
    )
    yield (
        "pgpass.password",
        "pgpass",
        [
            "$ cat ~/.pgpass\ndb.internal:5432:app:app_user:",
            secret(g.password(18)),
            "\n*:*:*:replica:",
            secret(g.password(20)),
            "\n$ ",
        ],
    )
    yield (
        "dockerfile.env",
        "dockerfile",
        [
            "FROM python:3.12-slim\nENV PYTHONUNBUFFERED 1\nENV DATABASE_PASSWORD ",
            secret(g.password(16)),
            '\nCMD ["python", "app.py"]\n',
        ],
    )
    yield (
        "yaml.block-scalar",
        "k8s",
        [
            "apiVersion: v1\nkind: Secret\nstringData:\n  db_password: |\n    ",
            secret(g.password(20)),
            "\n  username: app\n",
        ],
    )
    yield (
        "terraform.variable-default",
        "variables.tf",
        [
            'variable "region" {\n  default = "eu-west-1"\n}\n\nvariable "db_admin_password" {\n'
            '  type      = string\n  sensitive = true\n  default   = "',
            secret(g.password(18)),
            '"\n}\n',
        ],
    )
    yield (
        "http.session-cookie",
        "curl",
        [
            "$ curl -v https://app.acme.dev/account\n> GET /account HTTP/1.1\n> Cookie: theme=dark;"
            " sessionid=",
            secret(g.chars(ALNUM, 32)),
            "; lang=en\n< HTTP/1.1 200 OK\n",
        ],
    )
    yield (
        "http.authorization",
        "okta",
        [
            "curl -H 'Accept: application/json' -H 'Authorization: SSWS ",
            secret(g.chars(B64URL, 42)),
            "' https://acme.okta.com/api/v1/users\n",
        ],
    )
    yield (
        "generic.assignment",
        "passphrase",
        [
            "DB_HOST=db.internal\nDB_PASSWORD=",
            secret(
                "".join(
                    g.rng.choice(["copper", "lantern", "meadow", "violin", "harbor", "pepper"])
                    for _ in range(4)
                )
            ),
            "\nDB_PORT=5432\n",
        ],
    )
    tok = crc_token("ghp_")
    yield (
        "github.token",
        "zero-width",
        [
            "export GITHUB_TOKEN=",
            secret(tok[:9] + "\u200b" + tok[9:21] + "\u2060" + tok[21:]),
            "\n",
        ],
    )
    tok = crc_token("ghp_")
    yield (
        "github.token",
        "folded",
        ["$ fold -w 20 token.txt\n", secret(tok[:20] + "\n" + tok[20:]), "\n$ "],
    )
    tok = crc_token("ghs_")
    yield (
        "github.token",
        "continued",
        ["git clone https://x:", secret(tok[:18] + "\\\n" + tok[18:]), "@github.com/acme/api\n"],
    )
    inner = f"[default]\naws_access_key_id = {akid}\naws_secret_access_key = {g.chars(ALNUM, 40)}\n"
    yield (
        "aws.secret-access-key",
        "base64",
        [
            "apiVersion: v1\nkind: Secret\ndata:\n  credentials: ",
            secret(base64.b64encode(inner.encode()).decode()),
            "\n",
        ],
    )
    twice = base64.b64encode(
        base64.b64encode(f"STRIPE_SECRET_KEY=sk_live_{g.chars(ALNUM, 40)}\n".encode())
    ).decode()
    yield "stripe.live-key", "base64-twice", ['{"blob": "', secret(twice), '"}']


def harmless_texts(g: Any) -> Iterator[tuple[str, str]]:
    """Agent traffic that must stay silent at high tier: public client config, signed
    thinking blocks, hashes that look like tokens."""
    # One only: its apiKey is redacted (low), never asked about, so it counts once toward
    # the any-tier false-positive rate (see test_hidden.py for why it is not dropped).
    for _ in range(1):
        yield (
            "firebase-config",
            (
                'const firebaseConfig = {\n  apiKey: "AIza' + g.chars(B64URL, 35) + '",\n'
                '  authDomain: "acme-' + g.chars(LOW, 6) + '.firebaseapp.com",\n  projectId: '
                '"acme",\n  messagingSenderId: "' + g.chars(string.digits, 12) + '",\n  appId: '
                '"1:' + g.chars(string.digits, 12) + ":web:" + g.hex(22) + '"\n};\n'
            ),
        )
    for _ in range(3):
        sig = base64.b64encode(g.rng.randbytes(g.rng.randrange(300, 900))).decode()
        yield (
            "thinking-signature",
            (
                '{"role": "assistant", "content": [{"type": "thinking", "thinking": "The user '
                'wants the token refresh fixed; check auth.py first.", "signature": "'
                + sig
                + '"}, {"type": "text", "text": "Let me look at auth.py."}]}'
            ),
        )
    # jwt.io's example claims, signed with whatever key a tutorial prints beside them.
    claims = base64.urlsafe_b64encode(
        b'{"sub":"1234567890","name":"John Doe","admin":true,"iat":'
        + g.chars(string.digits, 10).encode()
        + b"}"
    )
    yield (
        "jwt-io-sample",
        "// secret is in the tutorial\nconst token = 'eyJhbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9."
        + claims.decode().rstrip("=")
        + "."
        + g.chars(B64URL, 43)
        + "';",
    )
    # Placeholders made of one character repeated (`glc_111...`, an all-zero age key), and
    # a Freenet USK key whose middle reads like an Entra secret.
    yield (
        "repeated-placeholder",
        'API_KEY="glc_' + "1" * 42 + '="\nAGE_KEY=AGE-SECRET-KEY-1' + "Q" * 58,
    )
    yield (
        "freenet-usk",
        f'Identity="USK@{g.chars(B64URL, 43)},{g.chars(ALNUM, 3)}~{g.chars(ALNUM, 1)}8Q~'
        f'{g.chars(ALNUM, 33)}~{g.chars(ALNUM, 3)},AQACAAE/WebOfTrust/2"',
    )
    yield (
        "redacted-thinking",
        (
            '{"type": "redacted_thinking", "data": "'
            + base64.b64encode(g.rng.randbytes(1200)).decode()
            + '"}'
        ),
    )
    yield (
        "wrapped-base64",
        "\n".join(base64.b64encode(g.rng.randbytes(57)).decode() for _ in range(12)),
    )
