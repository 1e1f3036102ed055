package com.shop.importer;

import java.io.IOException;
import java.io.ObjectInputStream;
import javax.servlet.http.HttpServlet;
import javax.servlet.http.HttpServletRequest;
import javax.servlet.http.HttpServletResponse;

public class ImportServlet extends HttpServlet {
    @Override
    protected void doPost(HttpServletRequest req, HttpServletResponse resp) throws IOException {
        try (ObjectInputStream in = new ObjectInputStream(req.getInputStream())) {
            Object cart = in.readObject();
            resp.getWriter().print(cart.toString());
        } catch (ClassNotFoundException e) {
            resp.sendError(400);
        }
    }
}
