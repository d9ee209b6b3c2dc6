"""The `gateway` section: the authenticated HTTPS front door to the models."""

from __future__ import annotations

from typing import Annotated, Literal, Self

from pydantic import Field, HttpUrl, StringConstraints, model_validator

from .base import SecretName, Strict

Hostname = Annotated[
    str,
    StringConstraints(pattern=r"^([a-z0-9]([-a-z0-9]*[a-z0-9])?\.)+[a-z]{2,63}$", max_length=253),
]
AcmArn = Annotated[str, StringConstraints(pattern=r"^arn:aws[a-z-]*:acm:[a-z0-9-]+:\d{12}:certificate/[0-9a-f-]+$")]


class Jwt(Strict):
    issuer: HttpUrl
    jwks_uri: HttpUrl
    audiences: list[str] = Field(default_factory=list)


class Tls(Strict):
    """TLS for the HTTPS listener: an ACM certificate on the load balancer, or a cert Secret."""

    certificate_arn: AcmArn | None = None
    secret_name: SecretName | None = None

    @model_validator(mode="after")
    def _one(self) -> Self:
        if (self.certificate_arn is None) == (self.secret_name is None):
            raise ValueError("give exactly one of certificateArn (ACM) or secretName (kubernetes.io/tls Secret)")
        return self


class RateLimit(Strict):
    """Per-client request limit. The client id header is set by the gateway from the authenticated
    identity (API-key client name or the JWT `sub`), so a client cannot pick its own bucket."""

    requests_per_minute: int = Field(ge=1, le=1_000_000)
    client_header: Annotated[str, StringConstraints(pattern=r"^[a-z0-9-]+$", max_length=64)] = "x-client-id"


class GatewaySection(Strict):
    """`inference-platform:gateway`."""

    enabled: bool = True
    hostname: Hostname = "inference.example.com"
    auth: Literal["apiKey", "jwt", "none"] = "apiKey"
    api_keys_secret: SecretName = "inference-api-keys"
    jwt: Jwt | None = None
    allow_unauthenticated: bool = False
    tls: Tls | None = None
    rate_limit: RateLimit | None = None
    # Where clients put the API key; Envoy strips a leading "Bearer " (Authorization: Bearer <key>).
    api_key_header: Annotated[str, StringConstraints(pattern=r"^[A-Za-z0-9-]+$", max_length=64)] = "Authorization"
    scheme: Literal["internet-facing", "internal"] = "internet-facing"  # the AWS load balancer's scheme

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
