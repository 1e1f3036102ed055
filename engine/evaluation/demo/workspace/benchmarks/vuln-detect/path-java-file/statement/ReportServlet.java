package com.reports;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.Paths;
import javax.servlet.http.HttpServlet;
import javax.servlet.http.HttpServletRequest;
import javax.servlet.http.HttpServletResponse;

public class ReportServlet extends HttpServlet {
    private static final String BASE = "/var/reports/";

    @Override
    protected void doGet(HttpServletRequest req, HttpServletResponse resp) throws IOException {
        String name = req.getParameter("report");
        String lang = req.getHeader("Accept-Language");
        Path file = Paths.get(BASE + name);
        resp.setHeader("Content-Language", lang);
        resp.getOutputStream().write(Files.readAllBytes(file));
    }
}
