"""TLS for tests: a certificate made here, signed by its own key, and the simulator served over HTTPS with it."""

from __future__ import annotations

import contextlib
import datetime
import ipaddress
import ssl
from collections.abc import AsyncIterator
from pathlib import Path

from aiohttp import web
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import NameOID

from tests.conftest import free_port
from tokenpace import sim


def self_signed(folder: Path, host: str = "127.0.0.1") -> tuple[Path, Path]:
    """A certificate for the IP address ``host`` signed by its own key, and the key (PEM files in ``folder``)."""
    key = ec.generate_private_key(ec.SECP256R1())
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "tokenpace test")])
    now = datetime.datetime.now(datetime.UTC)
    cert = (
        x509.CertificateBuilder()
        .subject_name(name)
        .issuer_name(name)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(minutes=5))
        .not_valid_after(now + datetime.timedelta(days=1))
        .add_extension(x509.SubjectAlternativeName([x509.IPAddress(ipaddress.ip_address(host))]), False)
        .add_extension(x509.BasicConstraints(ca=True, path_length=None), True)
        .sign(key, hashes.SHA256())
    )
    cert_file, key_file = folder / "cert.pem", folder / "key.pem"
    cert_file.write_bytes(cert.public_bytes(serialization.Encoding.PEM))
    key_file.write_bytes(
        key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption())
    )
    return cert_file, key_file


@contextlib.asynccontextmanager
async def tls_simulator(
    folder: Path, host: str = "127.0.0.1", simulator: sim.Simulator | None = None
) -> AsyncIterator[tuple[str, Path]]:
    """The simulator over HTTPS on ``host`` with a self-signed certificate: its /v1 base URL and the certificate."""
    cert_file, key_file = self_signed(folder, host)
    context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    context.load_cert_chain(cert_file, key_file)
    app = (simulator or sim.Simulator()).app()
    runner = web.AppRunner(app, access_log=None, handler_cancellation=True, shutdown_timeout=0.5)
    await runner.setup()
    port = free_port()
    await web.TCPSite(runner, host, port, ssl_context=context).start()
    try:
        yield f"https://{host}:{port}/v1", cert_file
    finally:
        await runner.cleanup()
