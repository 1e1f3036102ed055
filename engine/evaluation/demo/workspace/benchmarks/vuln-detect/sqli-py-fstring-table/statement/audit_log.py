import sqlite3

TABLE = "audit_log"


def entries_for(conn: sqlite3.Connection, user_id: int):
    cur = conn.cursor()
    cur.execute(f"SELECT at, action FROM {TABLE} WHERE user_id = ?", (user_id,))
    return cur.fetchall()
