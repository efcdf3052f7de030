"""The config file's shape: the pydantic tables a TOML file is checked against, each key's error naming its key.

endpoints.py reads a file through these into plain frozen data (see its docstring for every key); nothing else
uses them.
"""

from __future__ import annotations

from typing import Annotated, Any

import pydantic

from tokenpace.config.alerts import AlertsTable
from tokenpace.config.headers import check_header
from tokenpace.config.incidents import IncidentsTable
from tokenpace.config.models import ModelTable, Name
from tokenpace.config.plain import is_one_line
from tokenpace.config.price_tables import PriceTable
from tokenpace.config.protocols import ProtocolName
from tokenpace.config.regions import RegionsTable
from tokenpace.config.settings import DEFAULT_CONCURRENCY, PlanKeys, ScheduleTable

MAX_ABOUT = 600  # characters of the file's `about`: a few sentences on /methodology, not a page


def _one_line(text: str) -> str:
    if not text.strip() or not is_one_line(text):
        raise ValueError("give one line of text, without control characters or bidi controls")
    return text


About = Annotated[str, pydantic.Field(max_length=MAX_ABOUT), pydantic.AfterValidator(_one_line)]


class _Strict(pydantic.BaseModel):
    model_config = pydantic.ConfigDict(extra="forbid", frozen=True)

    @pydantic.field_validator("headers", check_fields=False)
    @classmethod
    def _one_line_headers(cls, headers: dict[str, str]) -> dict[str, str]:
        for name, value in headers.items():
            check_header(name, value)
        return headers


Quantization = Annotated[str, pydantic.Field(min_length=1, max_length=40, pattern=r"^[\w.+-]+$")]
# model -> the Scenario fields of the simulator that stands in for it offline (serve --simulate checks them)
Offline = dict[str, dict[str, Any]]


class PlanTable(_Strict, PlanKeys):
    api_key_env: str | None = None
    base_url: pydantic.HttpUrl | None = None
    protocol: ProtocolName | None = None
    protocols: dict[str, ProtocolName] = {}  # model -> its own protocol
    headers: dict[str, str] = {}
    models: list[Name] = pydantic.Field(min_length=1)
    price: PriceTable | None = None
    prices: dict[str, PriceTable] = {}
    offline: Offline = {}


class ProviderTable(_Strict, PlanKeys):
    preset: str | None = None  # defaults from a well-known provider; the table's name is tried too
    base_url: pydantic.HttpUrl | None = None
    protocol: ProtocolName | None = None
    api_key_env: str | None = None
    plan: Name = "default"
    headers: dict[str, str] = {}
    models: list[Name] = []
    plans: dict[Name, PlanTable] = {}
    concurrency: int = pydantic.Field(default=DEFAULT_CONCURRENCY, ge=1)
    simulate: dict[str, Any] | None = None  # checked by sim.scenarios when a simulator is started
    price: PriceTable | None = None
    prices: dict[str, PriceTable] = {}
    quantization: dict[str, Quantization] = {}  # model -> what the provider states, e.g. "fp8"
    protocols: dict[str, ProtocolName] = {}  # model -> its own protocol
    offline: Offline = {}


class FileTable(_Strict):
    providers: dict[Name, ProviderTable] = {}  # names and model ids shown as written: no control characters
    workloads: dict[str, dict[str, Any]] = {}  # checked by workload_from_config
    corpus: str | None = None  # a folder of .txt / .md / .html files, relative to the config file
    schedule: ScheduleTable = ScheduleTable()
    models: dict[str, ModelTable] = {}
    alerts: AlertsTable = AlertsTable()  # webhooks for changes (config/alerts.py)
    incidents: IncidentsTable = IncidentsTable()  # the incident rules' thresholds (config/incidents.py)
    regions: RegionsTable = RegionsTable()  # where probe agents measure from (config/regions.py)
    about: About | None = None  # why these endpoints, on /methodology's FAQ
