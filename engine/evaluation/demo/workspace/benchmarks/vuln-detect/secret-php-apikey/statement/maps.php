<?php
$apiKey = "demo-maps-key-not-real";

function geocode($address) {
    global $apiKey;
    return file_get_contents('https://maps.example.com/geocode?key=' . $apiKey . '&q=' . urlencode($address));
}
