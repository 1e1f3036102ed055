def sales_for(conn, region: str):
    cur = conn.cursor()
    cur.execute("SELECT day, total FROM sales WHERE region = '%s'" % region)
    return cur.fetchall()
