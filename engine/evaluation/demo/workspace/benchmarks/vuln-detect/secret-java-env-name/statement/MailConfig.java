package com.shop.mail;

public class MailConfig {
    private static final String PASSWORD_ENV = "MAIL_PASSWORD";

    public String password() {
        String value = System.getenv(PASSWORD_ENV);
        if (value == null) {
            throw new IllegalStateException(PASSWORD_ENV + " is not set");
        }
        return value;
    }
}
