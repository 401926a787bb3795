"""research.corpora.small_tenant_sections: a small tenant carved out of a corpus (the study of
small tenants, docs/evaluation.md). Pure; no database."""

from research.corpora import Item, small_tenant_sections


def _item(n: int, gold: tuple[str, ...]) -> Item:
    return Item(id=f"i{n}", group=f"g{n}", side="calibration", question=f"q{n}", gold=gold,
                same_need=(f"r{n}",), close=())


ALL = [f"s{i}" for i in range(100)]
ITEMS = [_item(i, (f"s{i}",)) for i in range(40)] + [_item(99, ("missing",))]


def test_a_small_tenant_holds_whole_items_gold_and_other_sections_up_to_its_size():
    kept, chosen = small_tenant_sections(ALL, ITEMS, 20, seed=0)
    assert len(kept) == 20 and kept <= set(ALL)
    golds = {g for item in chosen for g in item.gold}
    assert golds <= kept and len(golds) == 10          # half the size is items' gold
    assert all(item.id != "i99" for item in chosen)    # an item whose gold the corpus lacks is never chosen
    assert len(kept - golds) == 10                     # the rest other sections


def test_the_seed_chooses_the_tenant_and_the_same_seed_the_same_one():
    first, _ = small_tenant_sections(ALL, ITEMS, 20, seed=0)
    assert small_tenant_sections(ALL, ITEMS, 20, seed=0)[0] == first
    assert small_tenant_sections(ALL, ITEMS, 20, seed=1)[0] != first
