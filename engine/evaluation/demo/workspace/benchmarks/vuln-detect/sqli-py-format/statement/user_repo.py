import sqlite3

DB_PATH = "app.db"


def find_user(name):
    conn = sqlite3.connect(DB_PATH)
    cur = conn.cursor()
    cur.execute("SELECT id, name, email FROM users WHERE name = '%s'" % name)
    row = cur.fetchone()
    conn.close()
    return row
