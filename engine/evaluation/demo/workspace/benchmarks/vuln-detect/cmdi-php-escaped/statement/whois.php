<?php
$domain = $_GET['domain'];
$output = shell_exec('whois ' . escapeshellarg($domain));
echo '<pre>' . htmlspecialchars($output) . '</pre>';
