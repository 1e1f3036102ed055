import psycopg2

DB_HOST = "db.internal"
DB_USER = "shop"
DB_PASSWORD = "letmein-demo"


def connect():
    return psycopg2.connect(host=DB_HOST, user=DB_USER, password=DB_PASSWORD)
