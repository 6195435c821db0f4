"""Lance's REST namespace client is initialised on first use, not when the chunk store loads
(stores/lance/rest_client.py): a fresh interpreter, as each CLI command is."""

import subprocess
import sys
import textwrap

LOAD_AND_USE = textwrap.dedent(
    """
    import sys
    import citewell.stores.lance.store  # the store's package defers the client
    import lance, lancedb
    assert "lance_namespace_urllib3_client.api" not in sys.modules, "initialised at import"
    db = lancedb.connect(sys.argv[1])  # the test's tmp_path, not a folder left in /tmp
    db.create_table("t", [{"id": "a", "vector": [0.5, 0.5]}])
    assert db.open_table("t").count_rows() == 1
    assert "lance_namespace_urllib3_client.api" not in sys.modules, "initialised by a table"
    from lance_namespace_urllib3_client import ApiClient, TableApi  # first use: whole init
    from lance_namespace_urllib3_client.api.table_api import TableApi as Same
    assert TableApi is Same and ApiClient.__name__ == "ApiClient"
    print("ok")
    """
)


def test_the_rest_client_is_initialised_on_first_use_only(tmp_path):
    done = _python(LOAD_AND_USE, str(tmp_path))
    assert done.returncode == 0 and done.stdout.strip() == "ok", done.stderr


def test_an_interpreter_that_loaded_lance_first_is_left_as_it_is():
    code = (
        "import sys, lance\n"
        "from citewell.stores.lance import rest_client\n"
        "before = sys.modules[rest_client.CLIENT]\n"
        "rest_client.defer_rest_client()\n"
        "assert sys.modules[rest_client.CLIENT] is before and hasattr(before, 'ApiClient')\n"
        "print('ok')\n"
    )
    done = _python(code)
    assert done.returncode == 0 and done.stdout.strip() == "ok", done.stderr


def _python(code: str, *args: str) -> subprocess.CompletedProcess[str]:
    command = [sys.executable, "-c", code, *args]
    return subprocess.run(command, capture_output=True, text=True, timeout=120, check=False)


def test_threads_asking_at_once_all_get_the_initialised_client():
    code = textwrap.dedent(
        """
        import threading
        import citewell.stores.lance.store, lancedb
        from concurrent.futures import ThreadPoolExecutor
        start = threading.Barrier(4)

        def ask(name):
            start.wait()
            import lance_namespace_urllib3_client as client
            return getattr(client, name).__name__

        names = ["ApiClient", "TableApi", "NamespaceApi", "Configuration"]
        with ThreadPoolExecutor(4) as pool:
            assert list(pool.map(ask, names)) == names
        print("ok")
        """
    )
    done = _python(code)
    assert done.returncode == 0 and done.stdout.strip() == "ok", done.stderr
