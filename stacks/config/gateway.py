"""The `gateway` section: the authenticated HTTPS front door to the models."""

from __future__ import annotations

from typing import Annotated, Literal, Self

from pydantic import Field, StringConstraints, model_validator

from .base import FetchUrl, Hostname, IssuerUrl, SecretName, Strict

AcmArn = Annotated[
    str,
    StringConstraints(
        pattern=r"^arn:aws(-[a-z]+)*:acm:[a-z]{2}(-[a-z]+)+-[0-9]:[0-9]{12}:certificate/[0-9a-f-]{1,64}$",
        max_length=2048,
    ),
]
# A JWT claim's name as Envoy Gateway's authorization reads it (1 to 253 characters); a nested claim is
# written with dots (`org.team`).
ClaimName = Annotated[str, StringConstraints(pattern=r"^[A-Za-z0-9_][A-Za-z0-9_.:/-]*$", max_length=253)]
# A JWT `aud` value: printable ASCII without spaces (a StringOrURI), compared byte for byte.
Audience = Annotated[str, StringConstraints(pattern=r"^[!-~]+$", max_length=253)]


class Jwt(Strict):
    """The JWT provider `auth: jwt` validates clients' bearer tokens against."""

    issuer: IssuerUrl = Field(
        description="The tokens' issuer (`iss`), an http(s) URL of at most 253 characters, passed to the gateway "
        "exactly as written (no slash added, nothing lower-cased): it must equal the tokens' `iss` byte for byte."
    )
    jwks_uri: FetchUrl = Field(
        description="URL of the issuer's JSON Web Key Set the signatures are checked with (at most 253 characters, "
        "used as written)."
    )
    audiences: list[Audience] = Field(
        default_factory=list,
        max_length=8,
        description="Accepted `aud` values (at most 8, as Envoy Gateway's SecurityPolicy takes; each printable "
        "ASCII without spaces, listed once); empty: the audience is not checked.",
    )
    team_claim: ClaimName = Field(
        default="team",
        description="The token claim naming the caller's team: a model's route admits tokens whose claim is its "
        "owner's team or a team it names in `consumers` (`platform` for the platform team's own clients), and "
        "refuses every other token (Envoy Gateway authorization, default deny). A string claim, compared exactly.",
    )


class Tls(Strict):
    """TLS for the HTTPS listener: an ACM certificate on the load balancer, or a cert Secret."""

    certificate_arn: AcmArn | None = Field(
        default=None,
        description="ACM certificate ARN: the NLB terminates TLS on 443 and forwards to Envoy. The only choice "
        "with AIBrix.",
    )
    secret_name: SecretName | None = Field(
        default=None,
        description="A `kubernetes.io/tls` Secret in the Gateway's namespace (`inference-gateway`): Envoy "
        "terminates TLS with it.",
    )

    @model_validator(mode="after")
    def _one(self) -> Self:
        if (self.certificate_arn is None) == (self.secret_name is None):
            raise ValueError("give exactly one of certificateArn (ACM) or secretName (kubernetes.io/tls Secret)")
        return self


# Where the gateway writes the authenticated client id when `rateLimit` does not name a header.
DEFAULT_CLIENT_HEADER = "x-client-id"


class RateLimit(Strict):
    """Per-client request limit. The client id header is set by the gateway from the authenticated
    identity (API-key client name or the JWT `sub`), so a client cannot pick its own bucket."""

    requests_per_minute: int = Field(
        ge=1,
        le=1_000_000,
        description="Requests each authenticated client may make per minute on each route, counted per Envoy replica.",
    )
    client_header: Annotated[str, StringConstraints(pattern=r"^[a-z0-9-]+$", max_length=64)] = Field(
        default=DEFAULT_CLIENT_HEADER,
        description="Header the gateway writes the client id into (the API key's name, or the JWT `sub`) and "
        "counts by; lower case.",
    )


class GatewaySection(Strict):
    """`inference-platform:gateway`: the authenticated HTTPS front door (Envoy Gateway behind an NLB);
    every exposed model is reached at `https://<hostname>/<model name>/v1`."""

    enabled: bool = Field(
        default=True,
        description="Create the platform's Gateway and route exposed models through it; with `addons.aibrix` on, "
        "models attach to AIBrix's Gateway whatever this says.",
    )
    hostname: Hostname = Field(
        default="inference.example.com",
        description="DNS name of the HTTPS listener and of every model route; the TLS certificate must cover it.",
    )
    auth: Literal["apiKey", "jwt", "none"] = Field(
        default="apiKey",
        description="How clients authenticate: `apiKey` (keys in `apiKeysSecret`), `jwt` (needs `jwt`) or `none` "
        "(needs `allowUnauthenticated: true`, refused in prod).",
    )
    api_keys_secret: SecretName = Field(
        default="inference-api-keys",
        description="The platform team's own clients' keys: an existing Opaque Secret in the Gateway's namespace, "
        "one entry per client (key: client name, value: its API key), created and rotated outside the stack. "
        "A route admits it when its model is the platform's or names `platform` as a consumer, and the listener "
        "admits it alone; a team's clients use their team's `teams[].apiKeysSecret`.",
    )
    jwt: Jwt | None = Field(default=None, description="The JWT provider; required with `auth: jwt`.")
    allow_unauthenticated: bool = Field(
        default=False,
        description="Accept `auth: none` (outside prod); an Ollama model still cannot be exposed without auth.",
    )
    tls: Tls | None = Field(
        default=None,
        description="TLS of the HTTPS listener; unset, Envoy terminates with the Secret `inference-tls` in "
        "`inference-gateway`, which `secrets.inference-tls.fromConfig` (`tls.crt`, `tls.key`) must then make (a "
        "warning in dev and staging, an error in prod).",
    )
    rate_limit: RateLimit | None = Field(
        default=None, description="Per-client request limit on every model route; unset: no limit."
    )
    # Envoy strips a leading "Bearer " (Authorization: Bearer <key>).
    api_key_header: Annotated[str, StringConstraints(pattern=r"^[A-Za-z0-9-]+$", max_length=64)] = Field(
        default="Authorization",
        description="Header clients send the API key in (`Authorization: Bearer <key>` by default); the gateway "
        "removes it before the request reaches the engine.",
    )
    scheme: Literal["internet-facing", "internal"] = Field(
        default="internet-facing",
        description="Scheme of the AWS load balancer: reachable from the internet, or only inside the VPC.",
    )

    @model_validator(mode="after")
    def _auth(self) -> Self:
        if self.auth == "none" and not self.allow_unauthenticated:
            raise ValueError(
                "auth: none leaves every model open to anyone who reaches the gateway; use "
                "auth: apiKey or jwt, or set allowUnauthenticated: true to accept that"
            )
        if self.auth == "jwt" and self.jwt is None:
            raise ValueError("auth: jwt needs jwt: {issuer, jwksUri}")
        return self

    @property
    def client_header(self) -> str:
        """The header the gateway writes the authenticated client id into (`rateLimit.clientHeader`)."""
        return self.rate_limit.client_header if self.rate_limit else DEFAULT_CLIENT_HEADER
