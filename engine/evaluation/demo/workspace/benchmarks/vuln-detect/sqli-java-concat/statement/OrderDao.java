package com.shop.orders;

import java.sql.Connection;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;

public class OrderDao {
    private final Connection conn;

    public OrderDao(Connection conn) {
        this.conn = conn;
    }

    public ResultSet ordersFor(String customer) throws SQLException {
        Statement stmt = conn.createStatement();
        return stmt.executeQuery("SELECT * FROM orders WHERE customer = '" + customer + "'");
    }
}
