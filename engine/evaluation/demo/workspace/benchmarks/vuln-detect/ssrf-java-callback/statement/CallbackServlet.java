package com.hooks;

import java.io.IOException;
import java.net.HttpURLConnection;
import java.net.URL;
import javax.servlet.http.HttpServlet;
import javax.servlet.http.HttpServletRequest;
import javax.servlet.http.HttpServletResponse;

public class CallbackServlet extends HttpServlet {
    @Override
    protected void doPost(HttpServletRequest req, HttpServletResponse resp) throws IOException {
        HttpURLConnection conn = (HttpURLConnection) new URL(req.getParameter("callback")).openConnection();
        resp.setStatus(conn.getResponseCode());
    }
}
