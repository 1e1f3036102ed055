import sqlite3


def find_user(conn: sqlite3.Connection, name: str):
    cur = conn.cursor()
    cur.execute("SELECT id, name, email FROM users WHERE name = %s", (name,))
    return cur.fetchone()
