import os

import psycopg2

DB_PASSWORD = os.environ["DB_PASSWORD"]


def connect():
    return psycopg2.connect(host="db.internal", user="shop", password=DB_PASSWORD)
