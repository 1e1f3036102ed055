package com.shop.hooks;

import java.io.IOException;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.util.Set;

public class WebhookSender {
    private static final Set<String> ALLOWED = Set.of("hooks.example.com");
    private final HttpClient http = HttpClient.newHttpClient();

    public int send(String target, String body) throws IOException, InterruptedException {
        URI uri = URI.create(target);
        if (!ALLOWED.contains(uri.getHost())) {
            throw new IllegalArgumentException("host not allowed");
        }
        HttpRequest req = HttpRequest.newBuilder(uri).POST(HttpRequest.BodyPublishers.ofString(body)).build();
        return http.send(req, HttpResponse.BodyHandlers.discarding()).statusCode();
    }
}
