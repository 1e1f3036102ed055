<?php
$pdo = new PDO('sqlite:/var/lib/crm/crm.db');
$stmt = $pdo->prepare('SELECT id, name FROM customers WHERE name LIKE ?');
$stmt->execute(['%' . $_POST['name'] . '%']);
echo json_encode($stmt->fetchAll());
