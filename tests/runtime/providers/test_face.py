"""The providers package imports the OpenAI client only when its OpenAI names are first used,
and the service face hands out the same objects."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from openseal.runtime import providers, service
from openseal.runtime.providers import check, openai_provider


def test_the_openai_names_are_the_modules_own() -> None:
    assert providers.OpenAIProvider is openai_provider.OpenAIProvider
    assert providers.check_profile is check.check_profile
    assert service.OpenAIProvider is openai_provider.OpenAIProvider
    assert service.check_profile is check.check_profile
    with pytest.raises(AttributeError, match="no_such_provider"):
        providers.no_such_provider  # noqa: B018


def test_providers_and_workers_import_without_the_openai_client() -> None:
    script = (
        "import sys\n"
        "import openseal.runtime.providers, openseal.runtime.service.workers\n"
        "before = 'openai' in sys.modules\n"
        "openseal.runtime.providers.OpenAIProvider\n"
        "print(__import__('json').dumps([before, 'openai' in sys.modules]))\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, check=True, timeout=120
    )
    assert json.loads(done.stdout) == [False, True]
