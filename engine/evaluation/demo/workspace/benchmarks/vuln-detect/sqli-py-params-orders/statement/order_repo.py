def order_total(conn, order_id: str):
    cur = conn.cursor()
    cur.execute("SELECT SUM(price) FROM order_lines WHERE order_id = %s", (order_id,))
    return cur.fetchone()[0]
