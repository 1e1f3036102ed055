<?php
$data = file_get_contents('https://weather.example.com/today.json');
$today = json_decode($data, true);
echo htmlspecialchars($today['summary']);
