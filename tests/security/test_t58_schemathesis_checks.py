"""T58: the schemathesis checks the functional suite does not run, over the live document.

tests/api/test_openapi.py::test_the_live_app_keeps_to_its_document runs
``not_a_server_error`` and the conformance checks. Here every operation gets
invalid inputs under ``negative_data_rejection`` (an invalid request must be
refused, not merely answered with a documented status) and ``ignored_auth``
(schemathesis drops and spoils the credentials the auth hook provides). The
server keeps every shipped limit: a 429 is a refusal too.
"""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import HealthCheck, Phase, given, settings
from hypothesis.errors import Unsatisfiable
from remote_server.testing.apifuzz import admin_schema
from remote_server.testing.liveserver import LiveServer
from schemathesis import GenerationMode
from schemathesis.checks import not_a_server_error
from schemathesis.specs.openapi.checks import ignored_auth, negative_data_rejection

from .conftest import ADMIN_PASSWORD

pytestmark = pytest.mark.slow

EXAMPLES = 10
CHECKS = [not_a_server_error, negative_data_rejection, ignored_auth]


@pytest.fixture(scope="module")
def api_schema(server: LiveServer) -> Any:
    return admin_schema(server.base_url, ADMIN_PASSWORD)


def test_t58_invalid_input_is_refused_and_auth_is_never_ignored(api_schema: Any,
                                                                 server: LiveServer) -> None:
    failures: list[str] = []
    for result in api_schema.get_all_operations():
        operation = result.ok()

        @given(case=operation.as_strategy(GenerationMode.NEGATIVE, auth_storage=api_schema.auth))
        @settings(max_examples=EXAMPLES, deadline=None, database=None,
                  suppress_health_check=list(HealthCheck), phases=[Phase.generate])
        def fuzz(case: Any) -> None:
            case.call_and_validate(base_url=server.base_url, checks=CHECKS)

        try:
            fuzz()
        except Unsatisfiable:
            pass  # an operation without input has nothing to spoil
        except Exception as exc:
            failures.append(f"{operation.label}: {exc}")
    assert not failures, "\n\n".join(failures)
