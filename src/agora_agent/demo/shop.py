"""The demo shop: customers, products and orders of two tenants (acme, globex) in one SQLite file.

Every table has a `tenant` column, so the governed SQL tool can scope queries to the caller's tenant.
`create_shop(path)` creates and seeds the file when it has no tables yet (idempotent); the seed is
fixed, with order dates counted back from the day the file was created.
"""

from __future__ import annotations

import sqlite3
from datetime import UTC, datetime, timedelta
from pathlib import Path

__all__ = ["TENANTS", "create_shop"]

TENANTS = ("acme", "globex")

SCHEMA = """
CREATE TABLE IF NOT EXISTS customers (
    id INTEGER PRIMARY KEY,
    tenant TEXT NOT NULL,
    name TEXT NOT NULL,
    email TEXT NOT NULL,
    city TEXT NOT NULL
);
CREATE TABLE IF NOT EXISTS products (
    id INTEGER PRIMARY KEY,
    tenant TEXT NOT NULL,
    name TEXT NOT NULL,
    category TEXT NOT NULL,
    price REAL NOT NULL
);
CREATE TABLE IF NOT EXISTS orders (
    id INTEGER PRIMARY KEY,
    tenant TEXT NOT NULL,
    customer_id INTEGER NOT NULL REFERENCES customers(id),
    product_id INTEGER NOT NULL REFERENCES products(id),
    quantity INTEGER NOT NULL,
    total REAL NOT NULL,
    status TEXT NOT NULL,
    ordered_at TEXT NOT NULL,
    refunded_at TEXT,
    refund_reason TEXT,
    refunded_by TEXT,
    refund_key TEXT
);
CREATE INDEX IF NOT EXISTS orders_tenant ON orders(tenant);
"""

_CUSTOMERS = {
    "acme": [
        ("Ada Lovelace", "ada@acme.test", "London"),
        ("Grace Hopper", "grace@acme.test", "New York"),
        ("Alan Turing", "alan@acme.test", "Manchester"),
        ("Katherine Johnson", "katherine@acme.test", "Hampton"),
    ],
    "globex": [
        ("Hank Scorpio", "hank@globex.test", "Cypress Creek"),
        ("Homer Simpson", "homer@globex.test", "Springfield"),
        ("Lisa Simpson", "lisa@globex.test", "Springfield"),
    ],
}
_PRODUCTS = {
    "acme": [
        ("Rocket Skates", "outdoor", 149.0),
        ("Giant Magnet", "tools", 89.5),
        ("Portable Hole", "tools", 39.99),
        ("Bird Seed (10 kg)", "garden", 12.0),
    ],
    "globex": [
        ("Hammock", "outdoor", 59.0),
        ("Doomsday Device", "tools", 999.0),
        ("Flamethrower", "garden", 249.0),
    ],
}
# (customer index, product index, quantity, status, days ago) per tenant; ids start at 1001 / 2001.
_ORDERS = {
    "acme": [
        (0, 0, 1, "paid", 0),
        (1, 1, 2, "shipped", 1),
        (2, 2, 3, "paid", 1),
        (3, 3, 5, "shipped", 2),
        (0, 2, 1, "paid", 3),
        (1, 0, 1, "shipped", 4),
        (2, 3, 10, "paid", 5),
        (3, 1, 1, "refunded", 6),
        (0, 3, 2, "shipped", 8),
        (1, 2, 4, "paid", 10),
        (2, 0, 2, "shipped", 12),
        (3, 2, 1, "paid", 13),
    ],
    "globex": [
        (0, 1, 1, "paid", 0),
        (1, 0, 2, "shipped", 1),
        (2, 2, 1, "paid", 2),
        (0, 2, 3, "shipped", 3),
        (1, 0, 1, "paid", 5),
        (2, 1, 1, "refunded", 7),
        (0, 0, 4, "paid", 9),
        (1, 2, 1, "shipped", 11),
    ],
}


def create_shop(path: str | Path, *, now: datetime | None = None) -> Path:
    """Create (if needed) and seed the shop database at `path`; returns the path. Safe to call again."""
    target = Path(path)
    target.parent.mkdir(parents=True, exist_ok=True)
    today = (now or datetime.now(UTC)).replace(hour=10, minute=0, second=0, microsecond=0)
    db = sqlite3.connect(target)
    try:
        with db:  # one transaction: a half-seeded shop is never left behind
            db.executescript(SCHEMA)
            if not db.execute("SELECT COUNT(*) FROM orders").fetchone()[0]:
                _seed(db, today)
    finally:
        db.close()
    return target


def _seed(db: sqlite3.Connection, today: datetime) -> None:
    customers: list[int]
    products: list[int]
    prices: list[float]
    customer_id, product_id = 1, 1
    for t_index, tenant in enumerate(TENANTS):
        customers, products = [], []
        for name, email, city in _CUSTOMERS[tenant]:
            db.execute("INSERT INTO customers VALUES (?, ?, ?, ?, ?)", (customer_id, tenant, name, email, city))
            customers.append(customer_id)
            customer_id += 1
        prices = []
        for name, category, price in _PRODUCTS[tenant]:
            db.execute("INSERT INTO products VALUES (?, ?, ?, ?, ?)", (product_id, tenant, name, category, price))
            products.append(product_id)
            prices.append(price)
            product_id += 1
        for n, (c, p, qty, status, days_ago) in enumerate(_ORDERS[tenant]):
            order_id = 1001 + 1000 * t_index + n
            when = (today - timedelta(days=days_ago, hours=n % 5)).isoformat()
            refunded = (today - timedelta(days=max(days_ago - 1, 0))).isoformat() if status == "refunded" else None
            db.execute(
                "INSERT INTO orders (id, tenant, customer_id, product_id, quantity, total, status, ordered_at, "
                "refunded_at, refund_reason, refunded_by) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                (
                    order_id,
                    tenant,
                    customers[c],
                    products[p],
                    qty,
                    round(prices[p] * qty, 2),
                    status,
                    when,
                    refunded,
                    "damaged on arrival" if refunded else None,
                    "seed" if refunded else None,
                ),
            )
