package com.shop.payments;

import java.net.http.HttpClient;

public class PaymentClient {
    private static final String USERNAME = "shop-service";
    private static final String PASSWORD = "admin123";

    private final HttpClient http = HttpClient.newHttpClient();

    public String basicAuth() {
        return USERNAME + ":" + PASSWORD;
    }
}
