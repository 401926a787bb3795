def test_recall_prefetches_recorded_trail(caller):
    caller.upsert({"doc#a": "Install the package with apt install acme on Debian."})
    r = caller.record(query="How do I install acme on Debian?", cited=["doc#a"])
    assert r.status_code == 201, r.content
    body = caller.recall("How do I install acme on Debian?")
    assert body["outcome"] == "prefetch"
    assert body["sections"][0]["text"].startswith("Install the package")
