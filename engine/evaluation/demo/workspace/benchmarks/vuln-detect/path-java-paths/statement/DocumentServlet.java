package com.docs;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Paths;
import javax.servlet.http.HttpServlet;
import javax.servlet.http.HttpServletRequest;
import javax.servlet.http.HttpServletResponse;

public class DocumentServlet extends HttpServlet {
    private static final String ROOT = "/srv/docs/";

    @Override
    protected void doGet(HttpServletRequest req, HttpServletResponse resp) throws IOException {
        String doc = req.getParameter("doc");
        resp.getWriter().write(Files.readString(Paths.get(ROOT + doc)));
    }
}
