package com.shop.customers;

import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;

public class CustomerDao {
    private final Connection conn;

    public CustomerDao(Connection conn) {
        this.conn = conn;
    }

    public ResultSet byEmail(String email) throws SQLException {
        PreparedStatement ps = conn.prepareStatement("SELECT id, name FROM customers WHERE email = ?");
        ps.setString(1, email);
        return ps.executeQuery();
    }
}
